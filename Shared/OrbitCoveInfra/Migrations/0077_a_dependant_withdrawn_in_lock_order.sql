-- calendar_withdraw_dependant (0074) locked the family member's row, then the guardian's member
-- lock in each community; an answer takes that member lock first (calendar_answer, 0059), then
-- the row (its foreign key). A guardian answering for the child while deleting it could so make
-- PostgreSQL break a deadlock. The member locks are now taken first, in community order, for
-- every community the guardian is in (the only ones a dependant's answers to what is still to
-- come can be in: leaving withdraws them), then the row.
CREATE OR REPLACE FUNCTION calendar_withdraw_dependant(dependant uuid)
RETURNS TABLE (community_id uuid, community_name text, event_id uuid, recurrence_id timestamptz, user_id uuid,
               family_member_id uuid, promoted boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
DECLARE
    guardian uuid;
    community uuid;
    instance record;
BEGIN
    SELECT f.user_id INTO guardian FROM family_members f WHERE f.id = dependant;
    IF guardian IS NULL OR guardian IS DISTINCT FROM (SELECT app_current_user_id()) THEN
        RETURN;
    END IF;
    -- The guardian's answers in flight commit first (calendar_answer), in every community.
    FOR community IN
        SELECT m.community_id FROM members m WHERE m.user_id = guardian AND m.left_at IS NULL ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock(calendar_member_lock(community, guardian));
    END LOOP;
    -- Held until the deletion commits: an answer for it made meanwhile waits, then fails.
    PERFORM 1 FROM family_members f WHERE f.id = dependant FOR UPDATE;
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
