-- The day an instant falls on in a community's time zone, as core reads it in Swift
-- (LedgerDay): for a statement that compares an instant with a day on a community's clock.
-- Dues owed by every member fall to those who had joined by a period's due date, in the
-- reminders' recipients as in core's standings. A zone PostgreSQL does not know (communities'
-- zones are checked against Foundation's list, which could hold one PostgreSQL's lacks) reads
-- as UTC, as core reads a zone it does not know, instead of failing the statement and with it
-- every reminder of its batch.
CREATE FUNCTION app_local_date(at TIMESTAMP WITH TIME ZONE, zone TEXT) RETURNS DATE
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (at AT TIME ZONE zone)::date;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN (at AT TIME ZONE 'UTC')::date;
END $$;
