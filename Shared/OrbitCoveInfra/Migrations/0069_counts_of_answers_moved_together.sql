-- 1. An instance's counts follow its answers when one statement moves many of them at once.
--    A series moved or split moves the answers of its later instances in two statements
--    (calendar_move_answers: parked 5,000 years ahead, then onto their new keys), and row
--    triggers run after the statement: the first moved answer found no counts row at the new
--    key and counted the instance whole (every answer the statement had moved there), then
--    each of the others added itself again. Three answers were shown as five, and the parked
--    keys kept what the first answers left behind. A missing counts row now starts from the
--    answer's own change, as every other change adds to it (concurrent first answers add up
--    through ON CONFLICT). An instance is counted whole only for a change that takes away from
--    a row that is not there, which only answers written past the trigger can leave; such a
--    recount in a statement that changes many answers of the instance is not exact either.
CREATE OR REPLACE FUNCTION count_answer_delta(
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
    IF FOUND THEN
        RETURN;
    END IF;
    IF d_going < 0 OR d_seats < 0 OR d_maybe < 0 OR d_declined < 0 OR d_waitlisted < 0 THEN
        PERFORM count_instance_answers(event, instance);
        RETURN;
    END IF;
    INSERT INTO event_instance_counts AS c
        (event_id, recurrence_id, community_id, going, seats, maybe, declined, waitlisted)
    SELECT event, instance, e.community_id, d_going, d_seats, d_maybe, d_declined, d_waitlisted
    FROM events e WHERE e.id = event
    ON CONFLICT (event_id, recurrence_id) DO UPDATE SET
        going = c.going + EXCLUDED.going, seats = c.seats + EXCLUDED.seats, maybe = c.maybe + EXCLUDED.maybe,
        declined = c.declined + EXCLUDED.declined, waitlisted = c.waitlisted + EXCLUDED.waitlisted;
END $$;

-- The moves leave nothing at the parked keys: once the answers are on their new keys, the
-- counts rows they passed through (zero by then: the triggers of each statement have run) are
-- dropped. The rest as in 0020.
CREATE OR REPLACE FUNCTION calendar_move_answers(
    source UUID, target UUID, at TIMESTAMP WITH TIME ZONE, shift INTERVAL, zone TEXT
) RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    moved INTEGER;
BEGIN
    IF NOT app_is_system() AND (
        SELECT count(*) FROM events e
        WHERE e.id IN (source, target)
          AND (e.community_id IN (SELECT app_admin_communities())
               OR (e.created_by = app_current_user_id() AND e.community_id IN (SELECT app_member_communities())))
    ) <> (CASE WHEN source = target THEN 1 ELSE 2 END)
    OR (SELECT count(DISTINCT community_id) FROM events WHERE id IN (source, target)) <> 1 THEN
        RAISE EXCEPTION 'not allowed to move answers between these events' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Two steps: a shift by a whole period would otherwise move one answer onto the key of
    -- the next before that one has moved (the unique index is checked row by row).
    UPDATE rsvps SET recurrence_id = recurrence_id + INTERVAL '5000 years'
    WHERE event_id = source AND recurrence_id >= at;
    UPDATE rsvps
    SET event_id = target,
        recurrence_id = (((recurrence_id - INTERVAL '5000 years') AT TIME ZONE zone) + shift) AT TIME ZONE zone
    WHERE event_id = source AND recurrence_id >= at + INTERVAL '5000 years';
    GET DIAGNOSTICS moved = ROW_COUNT;
    -- Only parked keys: `at` is '-infinity' when a whole series moves.
    DELETE FROM event_instance_counts
    WHERE event_id = source
      AND recurrence_id >= greatest(at + INTERVAL '5000 years', TIMESTAMP WITH TIME ZONE '3000-01-01 00:00:00+00');
    RETURN moved;
END $$;

-- What the moves miscounted so far: every counts row set to its answers counted afresh, a row
-- made for every instance answered without one (an instance was counted whole on its first
-- change until now, so an answer written past the trigger, or before 0020, had none; from now
-- on a first change starts the row from itself), and the rows at parked keys (no instance is
-- after the year 2200; a parked one is 5,000 years on) dropped once no answer is there.
-- Answers wait meanwhile (a deploy migrates while the release before still serves): an answer
-- committed during the recount would be lost from it. A wait of more than ten seconds for the
-- lock fails the migration, to be run again, rather than holding every answer up behind it.
SET LOCAL lock_timeout = '10s';
LOCK TABLE rsvps IN SHARE MODE;
UPDATE event_instance_counts c
SET going = a.going, seats = a.seats, maybe = a.maybe, declined = a.declined, waitlisted = a.waitlisted
FROM (
    SELECT k.event_id, k.recurrence_id,
           coalesce(r.going, 0) AS going, coalesce(r.seats, 0) AS seats, coalesce(r.maybe, 0) AS maybe,
           coalesce(r.declined, 0) AS declined, coalesce(r.waitlisted, 0) AS waitlisted
    FROM event_instance_counts k
    LEFT JOIN (
        SELECT event_id, coalesce(recurrence_id, '-infinity') AS instance,
               count(*) FILTER (WHERE status = 'yes' AND NOT waitlisted)::integer AS going,
               coalesce(sum(1 + plus_ones) FILTER (WHERE status = 'yes' AND NOT waitlisted), 0)::integer AS seats,
               count(*) FILTER (WHERE status = 'maybe')::integer AS maybe,
               count(*) FILTER (WHERE status = 'no')::integer AS declined,
               count(*) FILTER (WHERE waitlisted)::integer AS waitlisted
        FROM rsvps GROUP BY 1, 2
    ) r ON r.event_id = k.event_id AND r.instance = coalesce(k.recurrence_id, '-infinity')
) a
WHERE c.event_id = a.event_id AND coalesce(c.recurrence_id, '-infinity') = coalesce(a.recurrence_id, '-infinity')
  AND (c.going, c.seats, c.maybe, c.declined, c.waitlisted) IS DISTINCT FROM
      (a.going, a.seats, a.maybe, a.declined, a.waitlisted);
INSERT INTO event_instance_counts (event_id, recurrence_id, community_id, going, seats, maybe, declined, waitlisted)
SELECT r.event_id, r.recurrence_id, e.community_id,
       count(*) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted),
       coalesce(sum(1 + r.plus_ones) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted), 0),
       count(*) FILTER (WHERE r.status = 'maybe'),
       count(*) FILTER (WHERE r.status = 'no'),
       count(*) FILTER (WHERE r.waitlisted)
FROM rsvps r JOIN events e ON e.id = r.event_id
WHERE r.recurrence_id IS NULL OR r.recurrence_id < TIMESTAMP WITH TIME ZONE '3000-01-01 00:00:00+00'
GROUP BY r.event_id, r.recurrence_id, e.community_id
ON CONFLICT (event_id, recurrence_id) DO NOTHING;
DELETE FROM event_instance_counts c
WHERE c.recurrence_id >= TIMESTAMP WITH TIME ZONE '3000-01-01 00:00:00+00'
  AND NOT EXISTS (SELECT 1 FROM rsvps r WHERE r.event_id = c.event_id AND r.recurrence_id = c.recurrence_id);

-- 2. The services' role reads the migrations' ledger but no longer writes it (a hostile
--    probe's): with the services' credentials a row could be deleted, so that `migrate` ran
--    its DDL again as the owner, or a checksum rewritten to pass an edited migration. The
--    ledger is the only table without row-level security, and only the owner writes it.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations FROM orbitcove_app;
