-- A member who leaves (or is removed, or deletes their account) kept their answers, and with
-- them their seats: with a capacity of one, a former member held the place and the member
-- waiting behind them was never promoted; a guardian who left kept their child's seat too
-- (found by a hostile probe). Nobody could withdraw those answers: the former member may no
-- longer reach the community.
--
-- When a membership ends, the person's answers to instances still to come, theirs and their
-- dependants', are withdrawn, and each instance's yeses placed again; the answers that got a
-- place are returned (promoted) beside those withdrawn, for the caller to announce. Answers
-- to what has started or is over stay: they are what happened.
--
-- Placing an instance's answers, without calendar_placed_changes' check that the caller is a
-- member of the event's community (a member who has just left no longer is): the owner's
-- alone, for the functions below, which check for themselves.
CREATE FUNCTION calendar_place_instance(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (id UUID, waitlisted BOOLEAN)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
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
               AND sum(CASE WHEN a.status = 'yes' THEN 1 + a.plus_ones ELSE 0 END)
                   OVER (ORDER BY a.queued_at, a.id) > capacity AS waitlisted
        FROM rsvps a WHERE a.event_id = event AND a.recurrence_id IS NOT DISTINCT FROM instance
    ) placed
    WHERE r.id = placed.id AND r.waitlisted IS DISTINCT FROM placed.waitlisted
    RETURNING r.id, r.waitlisted;
END $$;
REVOKE EXECUTE ON FUNCTION calendar_place_instance(uuid, timestamptz) FROM PUBLIC;

-- As in 0026, the placing itself now calendar_place_instance's.
CREATE OR REPLACE FUNCTION calendar_placed_changes(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (id UUID, waitlisted BOOLEAN)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NOT app_is_system() AND NOT EXISTS (
        SELECT 1 FROM events e WHERE e.id = event AND e.community_id = ANY ((SELECT app_member_community_ids())::uuid[])
    ) THEN
        RAISE EXCEPTION 'not allowed to place answers to this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY SELECT * FROM calendar_place_instance(event, instance);
END $$;

-- SECURITY DEFINER (another member's answers, as calendar_placed_changes moves them), and safe
-- for anyone to call: for someone else who is still a member it does nothing, and otherwise only
-- what leaving does. A member leaving calls it for themselves just before they leave, while
-- they may still read the events it names; an admin's removal, and a deleted account, just
-- after. Each instance is locked as an answer locks it, in one order.
CREATE FUNCTION calendar_withdraw_departed(community uuid, person uuid)
RETURNS TABLE (event_id uuid, recurrence_id timestamptz, user_id uuid, family_member_id uuid, promoted boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    instance record;
BEGIN
    IF person IS DISTINCT FROM app_current_user_id() AND EXISTS (
        SELECT 1 FROM members m WHERE m.community_id = community AND m.user_id = person AND m.left_at IS NULL
    ) THEN
        RETURN;
    END IF;
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
REVOKE EXECUTE ON FUNCTION calendar_withdraw_departed(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION calendar_withdraw_departed(uuid, uuid) TO orbitcove_app;
