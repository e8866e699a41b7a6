-- Review fixes for 0070–0072 (issue 20).
--
-- 1. Answers the code before 0071 and 0072 stranded are deleted: a single event's under an
--    instance key, and a series' under none (a rule added or removed left them there). Nothing
--    reads them; an edit that moves answers onto such a key would collide with them (the person's
--    index is NULLS NOT DISTINCT) and fail for good. Answers a series' shorter rule left at its
--    dropped instances cannot be told in SQL (the rule is expanded in the service); the next edit
--    of the rule drops those (EventEdit.dropAnswers keeps only instances both rules had).
DELETE FROM rsvps r USING events e
WHERE r.event_id = e.id
  AND ((e.recurrence_rule IS NOT NULL AND r.recurrence_id IS NULL)
       OR (e.recurrence_rule IS NULL AND e.recurrence_parent_id IS NULL AND r.recurrence_id IS NOT NULL));
DELETE FROM event_instance_counts c USING events e
WHERE c.event_id = e.id
  AND ((e.recurrence_rule IS NOT NULL AND c.recurrence_id IS NULL)
       OR (e.recurrence_rule IS NULL AND e.recurrence_parent_id IS NULL AND c.recurrence_id IS NOT NULL))
  AND c.going = 0 AND c.seats = 0 AND c.maybe = 0 AND c.declined = 0 AND c.waitlisted = 0;

-- 2. Who may move or drop other people's answers to an event, in one place: an admin of its
--    community, or its creator while a member (as calendar_move_answers asks of each series).
CREATE FUNCTION calendar_may_edit(event UUID) RETURNS BOOLEAN
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN app_is_system() OR EXISTS (
        SELECT 1 FROM events e
        WHERE e.id = event
          AND (e.community_id IN (SELECT app_admin_communities())
               OR (e.created_by = app_current_user_id() AND e.community_id IN (SELECT app_member_communities()))));
END $$;

CREATE OR REPLACE FUNCTION calendar_rekey_answers(
    event UUID, from_key TIMESTAMP WITH TIME ZONE, to_key TIMESTAMP WITH TIME ZONE
) RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    moved INTEGER;
BEGIN
    IF NOT calendar_may_edit(event) THEN
        RAISE EXCEPTION 'not allowed to move answers of this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- No answer belongs at the new key (a single event has none under an instance, a series
    -- none under no instance): whatever is there was stranded, and would collide.
    DELETE FROM rsvps WHERE event_id = event AND recurrence_id IS NOT DISTINCT FROM to_key;
    UPDATE rsvps SET recurrence_id = to_key
    WHERE event_id = event AND recurrence_id IS NOT DISTINCT FROM from_key;
    GET DIAGNOSTICS moved = ROW_COUNT;
    DELETE FROM event_instance_counts c
    WHERE c.event_id = event AND c.recurrence_id IS NOT DISTINCT FROM from_key
      AND c.going = 0 AND c.seats = 0 AND c.maybe = 0 AND c.declined = 0 AND c.waitlisted = 0;
    RETURN moved;
END $$;

CREATE OR REPLACE FUNCTION calendar_drop_answers(event UUID, instances TIMESTAMP WITH TIME ZONE[])
RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    dropped INTEGER;
BEGIN
    IF NOT calendar_may_edit(event) THEN
        RAISE EXCEPTION 'not allowed to drop answers of this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM rsvps WHERE event_id = event AND recurrence_id = ANY (instances);
    GET DIAGNOSTICS dropped = ROW_COUNT;
    DELETE FROM event_instance_counts c
    WHERE c.event_id = event AND c.recurrence_id = ANY (instances)
      AND c.going = 0 AND c.seats = 0 AND c.maybe = 0 AND c.declined = 0 AND c.waitlisted = 0;
    RETURN dropped;
END $$;

-- The services call these two; nobody else needs to (CREATE FUNCTION grants PUBLIC).
REVOKE EXECUTE ON FUNCTION calendar_rekey_answers(uuid, timestamptz, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION calendar_drop_answers(uuid, timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION calendar_rekey_answers(uuid, timestamptz, timestamptz) TO orbitcove_app;
GRANT EXECUTE ON FUNCTION calendar_drop_answers(uuid, timestamptz[]) TO orbitcove_app;

-- 3. 0070's policy with its columns named by table (`type` resolved to transactions' only
--    because members has none).
ALTER POLICY transactions_create ON transactions
    WITH CHECK ((SELECT app_is_system()) OR (
        created_by = (SELECT app_current_user_id())
        AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (transactions.type <> 'settlement' OR (SELECT app_current_user_id()) IN (paid_by, paid_to)
             OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                    AND m.user_id = transactions.paid_by
                    AND (m.left_at IS NULL OR transactions.type = 'settlement'))
        AND (transactions.paid_to IS NULL OR EXISTS (
            SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
              AND m.user_id = transactions.paid_to
              AND (m.left_at IS NULL OR transactions.type = 'settlement')))));
