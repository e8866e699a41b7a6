-- 1. An instance's counts follow its answers when one statement moves many of them at once.
--    A series moved or split moves the answers of its later instances in two statements
--    (calendar_move_answers: parked 5,000 years ahead, then onto their new keys), and row
--    triggers run after the statement: the first moved answer found no counts row at the new
--    key and counted the instance whole (every answer the statement had moved there), then
--    each of the others added itself again. Three answers were shown as five, and the parked
--    keys kept what the first answers left behind. A missing counts row now starts from the
--    answer's own change, as every other change adds to it; an instance is counted whole only
--    for a change that takes away from a row that is not there (none is, unless rows were
--    written past the trigger).
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

-- What the moves miscounted so far: every counts row set to its answers counted afresh, and
-- the rows at parked keys (no instance is after the year 2200; a parked one is 5,000 years
-- on) dropped once no answer is there.
UPDATE event_instance_counts c
SET going = a.going, seats = a.seats, maybe = a.maybe, declined = a.declined, waitlisted = a.waitlisted
FROM (
    SELECT k.event_id, k.recurrence_id,
           count(r.id) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted)::integer AS going,
           coalesce(sum(1 + r.plus_ones) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted), 0)::integer AS seats,
           count(r.id) FILTER (WHERE r.status = 'maybe')::integer AS maybe,
           count(r.id) FILTER (WHERE r.status = 'no')::integer AS declined,
           count(r.id) FILTER (WHERE r.waitlisted)::integer AS waitlisted
    FROM event_instance_counts k
    LEFT JOIN rsvps r ON r.event_id = k.event_id AND r.recurrence_id IS NOT DISTINCT FROM k.recurrence_id
    GROUP BY k.event_id, k.recurrence_id
) a
WHERE c.event_id = a.event_id AND c.recurrence_id IS NOT DISTINCT FROM a.recurrence_id
  AND (c.going, c.seats, c.maybe, c.declined, c.waitlisted) IS DISTINCT FROM
      (a.going, a.seats, a.maybe, a.declined, a.waitlisted);
DELETE FROM event_instance_counts c
WHERE c.recurrence_id >= TIMESTAMP WITH TIME ZONE '3000-01-01 00:00:00+00'
  AND NOT EXISTS (SELECT 1 FROM rsvps r WHERE r.event_id = c.event_id AND r.recurrence_id = c.recurrence_id);

-- 2. The services' role reads the migrations' ledger but no longer writes it (a hostile
--    probe's): with the services' credentials a row could be deleted, so that `migrate` ran
--    its DDL again as the owner, or a checksum rewritten to pass an edited migration. The
--    ledger is the only table without row-level security, and only the owner writes it.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations FROM orbitcove_app;
