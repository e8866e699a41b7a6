-- An answer in a few round trips, and commits that no longer queue behind one another
-- (issue 20, "the write path"; BENCHMARKS.md, "Answers").
--
-- Before this an answer took eleven statements, four of them under the instance's lock
-- (read every answer, upsert, place, read every answer again), and every transaction that
-- wrote to the outbox sent a NOTIFY, which PostgreSQL serialises at commit across the whole
-- cluster (one lock on the notification queue, held through the commit), and which woke every
-- service's relay for every message.

-- One instance's answers are serialised by a transaction-scoped advisory lock on the
-- instance: an answer, and an edit that places its answers again (a new capacity). Named in
-- one place, so the answer (which locks by what the request names, before it reads the event)
-- and the editor (which locks what it read) take the same lock.
CREATE FUNCTION calendar_lock_instance(event UUID, instance TIMESTAMP WITH TIME ZONE) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(
        hashtextextended('rsvp:' || event::text || ':' || coalesce(extract(epoch FROM instance)::text, ''), 0))
$$;

-- Places every yes of the instance against its capacity again (in answer order) and returns
-- the answers whose place changed, with their place now. calendar_place_answers(), which the
-- editor calls, counts them. SECURITY DEFINER: a member's answer can move another member's
-- yes onto or off the waitlist, which the second wall would not let the member write.
CREATE FUNCTION calendar_placed_changes(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (id UUID, waitlisted BOOLEAN)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    capacity INTEGER;
BEGIN
    IF NOT app_is_system() AND NOT EXISTS (
        SELECT 1 FROM events e WHERE e.id = event AND e.community_id = ANY ((SELECT app_member_community_ids())::uuid[])
    ) THEN
        RAISE EXCEPTION 'not allowed to place answers to this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- The instance's capacity as committed now: its override's, or its series' (or the event's).
    SELECT CASE WHEN o.id IS NOT NULL THEN o.capacity ELSE e.capacity END INTO capacity
    FROM events e
    LEFT JOIN events o ON o.recurrence_parent_id = e.id AND o.recurrence_id = instance AND o.deleted_at IS NULL
    WHERE e.id = event;
    RETURN QUERY
    UPDATE rsvps r SET waitlisted = placed.waitlisted
    FROM (
        SELECT a.id, a.status = 'yes' AND capacity IS NOT NULL
               AND sum(CASE WHEN a.status = 'yes' THEN 1 + a.plus_ones ELSE 0 END)
                   OVER (ORDER BY a.queued_at, a.id) > capacity AS waitlisted
        FROM rsvps a WHERE a.event_id = event AND a.recurrence_id IS NOT DISTINCT FROM instance
    ) placed
    WHERE r.id = placed.id AND r.waitlisted IS DISTINCT FROM placed.waitlisted
    RETURNING r.id, r.waitlisted;
END $$;

CREATE OR REPLACE FUNCTION calendar_place_answers(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS INTEGER LANGUAGE sql AS $$
    SELECT count(*)::integer FROM calendar_placed_changes(event, instance)
$$;

-- One person's answer to an instance, as one step among the instance's answers: it takes the
-- instance's lock, checks that the event is as the caller read it (`seen_rows` rows, the
-- series or single event and the instance's override if it has one, whose `sequence`s add up
-- to `seen_sequences`; every update moves a row's sequence), upserts the answer and places
-- every yes again. An edit that committed since the caller read the event (a cancellation, a
-- new deadline) makes it fail with serialization_failure (40001): the caller reads again and
-- retries. Returns the answer as it now stands, with the status it replaced
-- (`previous_status`, NULL for a first answer), and every other answer whose place changed
-- (`mine` false). SECURITY INVOKER: the upsert goes through the second wall as the member.
CREATE FUNCTION calendar_answer(
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
BEGIN
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

-- The relays are woken in the process that wrote the message, after its commit
-- (Database.transaction); they poll for the rest (another process that died between its
-- commit and the wake-up). No NOTIFY: it serialised every commit that carried a message.
DROP TRIGGER trigger_outbox_notify ON outbox;
DROP FUNCTION notify_outbox();

-- How far behind the relays are, in one statement outside a transaction: the relays' idle
-- poll (nothing to claim: no transaction, no lock) and /metrics. Counts only; the rows stay
-- the system's.
CREATE FUNCTION outbox_backlog(OUT unpublished INTEGER, OUT oldest_age DOUBLE PRECISION)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT count(*)::integer, extract(epoch FROM now() - min(created_at))::double precision
    FROM outbox WHERE published_at IS NULL
$$;
REVOKE EXECUTE ON FUNCTION outbox_backlog() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_backlog() TO orbitcove_app;

-- Each instance's counts follow every answer by what it changed, instead of counting the
-- instance's answers again: a recount read every answer of the instance through an index
-- whose dead entries grow with every rewritten answer (each answer moves `updated_at`, which
-- idx_rsvps_user indexes, so no update is HOT), and cost more the busier the event. An
-- instance without a counts row yet is counted whole once (count_instance_answers).
CREATE FUNCTION count_answer_delta(
    event UUID, instance TIMESTAMP WITH TIME ZONE, d_going INTEGER, d_seats INTEGER, d_maybe INTEGER,
    d_declined INTEGER, d_waitlisted INTEGER
) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF d_going = 0 AND d_seats = 0 AND d_maybe = 0 AND d_declined = 0 AND d_waitlisted = 0 THEN
        RETURN;
    END IF;
    UPDATE event_instance_counts c
    SET going = c.going + d_going, seats = c.seats + d_seats, maybe = c.maybe + d_maybe,
        declined = c.declined + d_declined, waitlisted = c.waitlisted + d_waitlisted
    WHERE c.event_id = event AND (c.recurrence_id = instance OR (c.recurrence_id IS NULL AND instance IS NULL));
    IF NOT FOUND THEN
        PERFORM count_instance_answers(event, instance);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION rsvps_count() RETURNS TRIGGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    -- What the old and the new row add to their instance's counts, as count_instance_answers
    -- counts them: a yes with a place is going and takes 1 + plus_ones seats.
    o_going INTEGER := 0; o_seats INTEGER := 0; o_maybe INTEGER := 0; o_declined INTEGER := 0; o_waiting INTEGER := 0;
    n_going INTEGER := 0; n_seats INTEGER := 0; n_maybe INTEGER := 0; n_declined INTEGER := 0; n_waiting INTEGER := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        IF OLD.status = 'yes' AND OLD.waitlisted IS FALSE THEN
            o_going := 1;
            o_seats := coalesce(1 + OLD.plus_ones, 0);
        END IF;
        o_maybe := (OLD.status = 'maybe')::integer;
        o_declined := (OLD.status = 'no')::integer;
        o_waiting := (OLD.waitlisted IS TRUE)::integer;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        IF NEW.status = 'yes' AND NEW.waitlisted IS FALSE THEN
            n_going := 1;
            n_seats := coalesce(1 + NEW.plus_ones, 0);
        END IF;
        n_maybe := (NEW.status = 'maybe')::integer;
        n_declined := (NEW.status = 'no')::integer;
        n_waiting := (NEW.waitlisted IS TRUE)::integer;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.event_id = OLD.event_id AND NEW.recurrence_id IS NOT DISTINCT FROM OLD.recurrence_id THEN
        PERFORM count_answer_delta(NEW.event_id, NEW.recurrence_id, n_going - o_going, n_seats - o_seats,
                                   n_maybe - o_maybe, n_declined - o_declined, n_waiting - o_waiting);
    ELSE
        IF TG_OP <> 'INSERT' THEN
            PERFORM count_answer_delta(OLD.event_id, OLD.recurrence_id, -o_going, -o_seats, -o_maybe, -o_declined,
                                       -o_waiting);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM count_answer_delta(NEW.event_id, NEW.recurrence_id, n_going, n_seats, n_maybe, n_declined,
                                       n_waiting);
        END IF;
    END IF;
    RETURN NULL;
END $$;
