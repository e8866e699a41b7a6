-- Two gaps a hostile probe found on the answer's path (issue 20's review):
--
-- 1. An answer racing the event's deletion was answered 200 and lost: the deletion read who
--    had answered (none: it deletes rather than cancels) before the answer committed, and the
--    answer's check of the event's rows ran before the deletion committed. With answers already
--    there, the cancellation notice left out those who answered meanwhile. Now the answer holds
--    the event's rows FOR SHARE until it commits, and a removal locks the row before it reads
--    who answered (`EventEdit.remove`): each waits for the other, and whichever comes second
--    sees what the first did.
-- 2. `plus_ones` allowed NULL, and `calendar_answer` passed it through: a NULL counted no seat
--    and broke every attendance read of the event. The service never sends one; the column now
--    refuses it.
UPDATE rsvps SET plus_ones = 0 WHERE plus_ones IS NULL;
ALTER TABLE rsvps ALTER COLUMN plus_ones SET NOT NULL;

-- The rows an answer reads the event from (the series or single event, and the instance's
-- override), locked FOR SHARE until the transaction ends: their count and `sequence`s added up.
-- SECURITY DEFINER because a lock asks for the rows' UPDATE policy, which only the event's
-- editors pass; so it serves only the system and members of the event's community.
CREATE FUNCTION calendar_hold_event(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (rows_now INTEGER, sequences_now BIGINT)
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    SELECT count(*)::integer, coalesce(sum(r.sequence), 0)::bigint
    FROM (
        SELECT e.sequence FROM events e
        WHERE (e.id = event OR (e.recurrence_parent_id = event AND e.recurrence_id = instance))
          AND e.deleted_at IS NULL
          AND (app_is_system() OR e.community_id = ANY ((SELECT app_member_community_ids())::uuid[]))
        FOR SHARE
    ) r
$$;
REVOKE EXECUTE ON FUNCTION calendar_hold_event(uuid, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION calendar_hold_event(uuid, timestamptz) TO orbitcove_app;

CREATE OR REPLACE FUNCTION calendar_answer(
    event UUID, instance TIMESTAMP WITH TIME ZONE, person UUID, dependant UUID, answer rsvp_status, extra INTEGER,
    remark TEXT, seen_rows INTEGER, seen_sequences BIGINT
)
RETURNS TABLE (
    id UUID, user_id UUID, family_member_id UUID, status TEXT, plus_ones INTEGER, note TEXT,
    responded_at TIMESTAMP WITH TIME ZONE, waitlisted BOOLEAN, previous_status TEXT, mine BOOLEAN
)
LANGUAGE plpgsql SET search_path = public AS $$
-- The result's columns are named as the table's: in the statements, a name is the column.
#variable_conflict use_column
DECLARE
    previous rsvp_status;
    answered UUID;
    moved UUID[];
    rows_now INTEGER;
    sequences_now BIGINT;
    community UUID;
BEGIN
    -- The answerer stays a member until this commits: a leave or a removal waits for it (and
    -- then withdraws it), and an answer that waited for a leave to commit is refused.
    SELECT e.community_id INTO community FROM events e WHERE e.id = event;
    PERFORM pg_advisory_xact_lock_shared(calendar_member_lock(community, person));
    IF NOT EXISTS (
        SELECT 1 FROM members m WHERE m.community_id = community AND m.user_id = person AND m.left_at IS NULL
    ) THEN
        RAISE EXCEPTION 'the answerer is no longer a member of the community' USING ERRCODE = 'OCM01';
    END IF;
    -- The event's rows stay as read until this commits: an edit, a cancellation or a deletion
    -- waits for it (and then sees the answer), and one that committed first fails the check.
    -- Before the instance's lock, as an edit takes them (its UPDATE, then the instance's lock
    -- to place the answers again).
    SELECT h.rows_now, h.sequences_now INTO rows_now, sequences_now FROM calendar_hold_event(event, instance) h;
    IF rows_now <> seen_rows OR sequences_now <> seen_sequences THEN
        RAISE EXCEPTION 'the event changed while the answer was made' USING ERRCODE = 'serialization_failure';
    END IF;
    PERFORM calendar_lock_instance(event, instance);
    SELECT r.status INTO previous FROM rsvps r
    WHERE r.event_id = event AND r.recurrence_id IS NOT DISTINCT FROM instance AND r.user_id = person
      AND r.family_member_id IS NOT DISTINCT FROM dependant;
    INSERT INTO rsvps AS r (
        event_id, recurrence_id, user_id, family_member_id, status, plus_ones, note, responded_at, updated_at,
        queued_at)
    VALUES (event, instance, person, dependant, answer, extra, remark, clock_timestamp(), clock_timestamp(),
            clock_timestamp())
    ON CONFLICT (event_id, recurrence_id, user_id, family_member_id) DO UPDATE SET
        status = EXCLUDED.status, plus_ones = EXCLUDED.plus_ones, note = EXCLUDED.note,
        responded_at = clock_timestamp(), updated_at = clock_timestamp(),
        queued_at = CASE
            WHEN EXCLUDED.status = 'yes' AND (r.status <> 'yes' OR EXCLUDED.plus_ones > r.plus_ones)
            THEN clock_timestamp() ELSE r.queued_at END
    RETURNING r.id INTO answered;
    SELECT coalesce(array_agg(c.id), '{}') INTO moved FROM calendar_placed_changes(event, instance) c;
    RETURN QUERY
    SELECT r.id, r.user_id, r.family_member_id, r.status::text, r.plus_ones, r.note::text, r.responded_at, r.waitlisted,
           CASE WHEN r.id = answered THEN previous::text END, r.id = answered
    FROM rsvps r WHERE r.id = answered OR r.id = ANY (moved);
END $$;
