-- A review of 0056 and 0057.
--
-- 1. calendar_withdraw_departed (0057) answered anyone: a transaction entered as a user of
--    another community, or as nobody, could run it for a community it is not in and learn who
--    was promoted there. It now serves only the system, the person themselves, or a member of
--    the community (an admin removing someone); anyone else gets nothing.
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

-- 2. Those who left before 0057 still hold their seats: their answers to what is still to come
--    are withdrawn now, as the system (the promotions are not announced: they are placed as
--    the next answer to the instance would have placed them).
DO $$
DECLARE
    departed record;
BEGIN
    PERFORM set_config('app.system', 'on', true);
    FOR departed IN
        SELECT DISTINCT e.community_id, r.user_id
        FROM rsvps r JOIN events e ON e.id = r.event_id
        WHERE NOT EXISTS (
            SELECT 1 FROM members m WHERE m.community_id = e.community_id AND m.user_id = r.user_id
              AND m.left_at IS NULL)
        ORDER BY 1, 2
    LOOP
        PERFORM count(*) FROM calendar_withdraw_departed(departed.community_id, departed.user_id);
    END LOOP;
    PERFORM set_config('app.system', '', true);
END $$;

-- 3. The idempotency functions' waits (0056) are bounded as 0028's function bounds its own,
--    by a SET clause: each lock wait at most 30 s. The kept response and the release had no
--    bound at all outside a transaction (the claim set it in its body; now all three declare
--    it). A claim may wait twice per try, three tries at most.
ALTER FUNCTION app_idempotency_claim(uuid, text, text, uuid) SET lock_timeout = '30s';
ALTER FUNCTION app_idempotency_keep(uuid, text, uuid, integer, text, text, bytea) SET lock_timeout = '30s';
ALTER FUNCTION app_idempotency_release(uuid, text, uuid, boolean) SET lock_timeout = '30s';
