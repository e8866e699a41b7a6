-- A single event made a series, or a series made a single event, keeps its answers (issue 20's
-- second hostile probe). A single event's answers are keyed by no instance (`recurrence_id`
-- NULL) and a series' by each instance's original start, so a rule added or removed left them
-- under a key no read looks at: out of `rsvp`, the attendance list and the counts. The edit now
-- moves them: a single event's to its series' first instance, and a series' first instance's
-- to the single event it became. (A series' other instances' answers stay where they were, as
-- when a shorter rule drops instances: a longer rule finds them again.)
--
-- SECURITY DEFINER, as calendar_move_answers is: an answer is its author's to change, and the
-- move is the editor's (an admin of the community, or the event's creator while a member),
-- checked here. The answers' triggers keep the counts; the emptied counts row is dropped.
CREATE FUNCTION calendar_rekey_answers(event UUID, from_key TIMESTAMP WITH TIME ZONE, to_key TIMESTAMP WITH TIME ZONE)
RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    moved INTEGER;
BEGIN
    IF NOT app_is_system() AND NOT EXISTS (
        SELECT 1 FROM events e
        WHERE e.id = event
          AND (e.community_id IN (SELECT app_admin_communities())
               OR (e.created_by = app_current_user_id() AND e.community_id IN (SELECT app_member_communities())))
    ) THEN
        RAISE EXCEPTION 'not allowed to move answers of this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE rsvps SET recurrence_id = to_key
    WHERE event_id = event AND recurrence_id IS NOT DISTINCT FROM from_key;
    GET DIAGNOSTICS moved = ROW_COUNT;
    DELETE FROM event_instance_counts c
    WHERE c.event_id = event AND c.recurrence_id IS NOT DISTINCT FROM from_key
      AND c.going = 0 AND c.seats = 0 AND c.maybe = 0 AND c.declined = 0 AND c.waitlisted = 0;
    RETURN moved;
END $$;
