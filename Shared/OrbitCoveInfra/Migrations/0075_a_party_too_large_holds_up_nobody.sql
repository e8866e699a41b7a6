-- A yes whose party (one seat and its plus-ones) is larger than the whole capacity waits without
-- holding up those behind it. Yeses were placed by the running sum of the seats asked for in
-- answer order, so such a party (a capacity lowered below it; the API refuses a new one,
-- PARTY_TOO_LARGE) waited at the head of the line for good and everyone behind it waited too,
-- beside empty seats. It now counts for nothing in the sum and waits until the capacity grows to
-- seat it, when it takes its place in answer order again. The rest is as in 0057.
CREATE OR REPLACE FUNCTION calendar_place_instance(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (id UUID, waitlisted BOOLEAN)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    capacity INTEGER;
BEGIN
    -- The instance's capacity as committed now: its override's, or its series' (or the event's).
    SELECT CASE WHEN o.id IS NOT NULL THEN o.capacity ELSE e.capacity END INTO capacity
    FROM events e
    LEFT JOIN events o ON o.recurrence_parent_id = e.id AND o.recurrence_id = instance AND o.deleted_at IS NULL
    WHERE e.id = event;
    RETURN QUERY
    UPDATE rsvps r SET waitlisted = placed.waitlisted
    FROM (
        SELECT a.id, a.status = 'yes' AND capacity IS NOT NULL
               AND (1 + a.plus_ones > capacity
                    OR sum(CASE WHEN a.status = 'yes' AND 1 + a.plus_ones <= capacity THEN 1 + a.plus_ones ELSE 0 END)
                       OVER (ORDER BY a.queued_at, a.id) > capacity) AS waitlisted
        FROM rsvps a WHERE a.event_id = event AND a.recurrence_id IS NOT DISTINCT FROM instance
    ) placed
    WHERE r.id = placed.id AND r.waitlisted IS DISTINCT FROM placed.waitlisted
    RETURNING r.id, r.waitlisted;
END $$;

-- Instances such a party holds up today are placed again (those it let through are not told:
-- the change is the rule's, not an answer's).
DO $$
BEGIN
    PERFORM calendar_place_instance(r.event_id, r.recurrence_id)
    FROM (SELECT DISTINCT a.event_id, a.recurrence_id FROM rsvps a WHERE a.status = 'yes' AND a.waitlisted) r;
END $$;
