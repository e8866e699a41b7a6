-- A family member deleted gives up the seats it held at what is still to come, as a departure
-- does (calendar_withdraw_departed, 0057 to 0059): the next in line takes each one. The foreign
-- key's cascade deleted its answers and placed nobody, so a seat stood empty beside a waitlist.
-- Only its guardian withdraws them, in the transaction that deletes it (FamilyMemberStore);
-- its answers to what has started or is over go with it by the cascade, as before.
CREATE FUNCTION calendar_withdraw_dependant(dependant uuid)
RETURNS TABLE (community_id uuid, community_name text, event_id uuid, recurrence_id timestamptz, user_id uuid,
               family_member_id uuid, promoted boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    guardian uuid;
    instance record;
BEGIN
    -- Held until the deletion commits: an answer for it made meanwhile waits, then fails.
    SELECT f.user_id INTO guardian FROM family_members f WHERE f.id = dependant FOR UPDATE;
    IF guardian IS NULL OR guardian IS DISTINCT FROM (SELECT app_current_user_id()) THEN
        RETURN;
    END IF;
    FOR instance IN
        SELECT DISTINCT e.community_id AS community, c.name::text AS name, r.event_id AS event,
                        r.recurrence_id AS start
        FROM rsvps r
        JOIN events e ON e.id = r.event_id
        JOIN communities c ON c.id = e.community_id
        LEFT JOIN events o ON o.recurrence_parent_id = r.event_id AND o.recurrence_id = r.recurrence_id
                          AND o.deleted_at IS NULL
        WHERE r.family_member_id = dependant
          AND coalesce(o.starts_at, r.recurrence_id, e.starts_at) > now()
        ORDER BY 1, 3, 4
    LOOP
        -- The guardian's answers in flight in that community commit first (calendar_answer).
        PERFORM pg_advisory_xact_lock(calendar_member_lock(instance.community, guardian));
        PERFORM calendar_lock_instance(instance.event, instance.start);
        RETURN QUERY
        DELETE FROM rsvps r
        WHERE r.event_id = instance.event AND r.recurrence_id IS NOT DISTINCT FROM instance.start
          AND r.family_member_id = dependant
        RETURNING instance.community, instance.name, r.event_id, r.recurrence_id, r.user_id, r.family_member_id, false;
        RETURN QUERY
        SELECT instance.community, instance.name, r.event_id, r.recurrence_id, r.user_id, r.family_member_id, true
        FROM calendar_place_instance(instance.event, instance.start) c
        JOIN rsvps r ON r.id = c.id
        WHERE NOT c.waitlisted;
    END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION calendar_withdraw_dependant(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION calendar_withdraw_dependant(uuid) TO orbitcove_app;
