-- An answer sent while its author left, or was removed, outlived the departure and kept its
-- seat (found by a hostile probe: four answers racing a leave, one to four of them left behind
-- in every round). The departure listed the answers before any of them was locked, and an
-- answer already past the gate (which reads the memberships of the request's start) committed
-- after it. Now the two meet on one lock per member of a community: an answer holds it shared
-- until it commits and checks the membership as committed; the departure's withdrawal holds it
-- alone, so it waits for the answers in flight (and then withdraws them), and an answer after
-- it finds the member gone (`OCM01`, which core answers `404 COMMUNITY_NOT_FOUND`). The
-- member's lock comes before any instance's, in both.
CREATE FUNCTION calendar_member_lock(community uuid, person uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('member:' || community::text || ':' || person::text, 0)
$$;

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
    PERFORM calendar_lock_instance(event, instance);
    SELECT count(*), coalesce(sum(e.sequence), 0) INTO rows_now, sequences_now FROM events e
    WHERE (e.id = event OR (e.recurrence_parent_id = event AND e.recurrence_id = instance)) AND e.deleted_at IS NULL;
    IF rows_now <> seen_rows OR sequences_now <> seen_sequences THEN
        RAISE EXCEPTION 'the event changed while the answer was made' USING ERRCODE = 'serialization_failure';
    END IF;
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

CREATE OR REPLACE FUNCTION calendar_withdraw_departed(community uuid, person uuid)
RETURNS TABLE (event_id uuid, recurrence_id timestamptz, user_id uuid, family_member_id uuid, promoted boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    instance record;
BEGIN
    IF NOT (app_is_system() OR person = app_current_user_id()
            OR community = ANY ((SELECT app_member_community_ids())::uuid[])) THEN
        RETURN;
    END IF;
    IF person IS DISTINCT FROM app_current_user_id() AND EXISTS (
        SELECT 1 FROM members m WHERE m.community_id = community AND m.user_id = person AND m.left_at IS NULL
    ) THEN
        RETURN;
    END IF;
    -- Answers in flight commit first, and are withdrawn; later ones are refused (calendar_answer).
    PERFORM pg_advisory_xact_lock(calendar_member_lock(community, person));
    FOR instance IN
        SELECT DISTINCT r.event_id AS event, r.recurrence_id AS start
        FROM rsvps r
        JOIN events e ON e.id = r.event_id
        LEFT JOIN events o ON o.recurrence_parent_id = r.event_id AND o.recurrence_id = r.recurrence_id
                          AND o.deleted_at IS NULL
        WHERE e.community_id = community AND r.user_id = person
          AND coalesce(o.starts_at, r.recurrence_id, e.starts_at) > now()
        ORDER BY 1, 2
    LOOP
        PERFORM calendar_lock_instance(instance.event, instance.start);
        RETURN QUERY
        DELETE FROM rsvps r
        WHERE r.event_id = instance.event AND r.recurrence_id IS NOT DISTINCT FROM instance.start
          AND r.user_id = person
        RETURNING r.event_id, r.recurrence_id, r.user_id, r.family_member_id, false;
        RETURN QUERY
        SELECT r.event_id, r.recurrence_id, r.user_id, r.family_member_id, true
        FROM calendar_place_instance(instance.event, instance.start) c
        JOIN rsvps r ON r.id = c.id
        WHERE NOT c.waitlisted;
    END LOOP;
END $$;
