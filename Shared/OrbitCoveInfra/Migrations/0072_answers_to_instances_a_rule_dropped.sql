-- A rule that no longer has an instance drops its answers (issue 20's third hostile probe).
-- A shorter COUNT, an earlier UNTIL, another rule or none left the answers of the instances it
-- no longer generates where they were, out of every read, until a later rule happened to have
-- an instance at that time again: then they came back on it, waitlist flags and all, on what
-- may be a different event in all but its id (a weekly series made daily). The edit now
-- deletes them, as a deleted series' are; answers to removed instances the rule still has (an
-- exception date, shown cancelled to those who said yes or maybe) stay.
--
-- SECURITY DEFINER with calendar_move_answers' check: an answer is its author's to change, and
-- this is the editor's (an admin of the community, or the event's creator while a member).
-- The answers' triggers keep the counts; the emptied counts rows are dropped.
CREATE FUNCTION calendar_drop_answers(event UUID, instances TIMESTAMP WITH TIME ZONE[])
RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    dropped INTEGER;
BEGIN
    IF NOT app_is_system() AND NOT EXISTS (
        SELECT 1 FROM events e
        WHERE e.id = event
          AND (e.community_id IN (SELECT app_admin_communities())
               OR (e.created_by = app_current_user_id() AND e.community_id IN (SELECT app_member_communities())))
    ) THEN
        RAISE EXCEPTION 'not allowed to drop answers of this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM rsvps WHERE event_id = event AND recurrence_id = ANY (instances);
    GET DIAGNOSTICS dropped = ROW_COUNT;
    DELETE FROM event_instance_counts c
    WHERE c.event_id = event AND c.recurrence_id = ANY (instances)
      AND c.going = 0 AND c.seats = 0 AND c.maybe = 0 AND c.declined = 0 AND c.waitlisted = 0;
    RETURN dropped;
END $$;
