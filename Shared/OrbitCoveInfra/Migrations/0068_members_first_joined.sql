-- When someone first joined a community, kept when they leave and come back: `joined_at` is
-- the current membership's start, set again when a former member rejoins through an invite.
-- Dues owed by every member fall to those who were members when a period fell due or when
-- the dues were set up, counted from this first join (DuesStore, the reminders' dues
-- recipients): counted from `joined_at`, leaving and rejoining wiped what was owed.
--
-- Filled from `joined_at` with the table's triggers off: the change log would otherwise tell
-- every client that every membership changed.
ALTER TABLE members ADD COLUMN first_joined_at TIMESTAMP WITH TIME ZONE;
ALTER TABLE members DISABLE TRIGGER USER;
UPDATE members SET first_joined_at = coalesce(joined_at, now());
ALTER TABLE members ENABLE TRIGGER USER;
ALTER TABLE members ALTER COLUMN first_joined_at SET DEFAULT now(),
    ALTER COLUMN first_joined_at SET NOT NULL;

-- Like `joined_at`, only the system (an invite's join) or the owner moves it.
CREATE FUNCTION guard_member_first_join() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF NOT app_trusted_writer(TG_RELID) THEN
        RAISE EXCEPTION 'a membership cannot move' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER members_guard_first_join BEFORE UPDATE OF first_joined_at ON members FOR EACH ROW
    WHEN (NEW.first_joined_at IS DISTINCT FROM OLD.first_joined_at)
    EXECUTE FUNCTION guard_member_first_join();
