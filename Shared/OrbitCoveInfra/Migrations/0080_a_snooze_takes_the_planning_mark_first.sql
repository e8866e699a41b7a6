-- A member's change to a care occurrence (mark, snooze, reassign) locked the occurrence, then,
-- through care_occurrences_planning (0045), its reminder's planning mark in reminder_subjects;
-- the planner takes the mark first, then the reminder's occurrences. Two members snoozing one
-- occurrence at once so made PostgreSQL break a deadlock between the second snooze and the
-- first one's planner (a 503 to the member, a warning from the planner). The change now takes
-- the mark first, with this function, as the planner does. It marks only a reminder of one of
-- the caller's communities, not deleted; what it marks is planned again, which the change's
-- trigger would have asked for anyway.
CREATE FUNCTION care_take_planning_mark(reminder uuid) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    INSERT INTO reminder_subjects (kind, subject_id, community_id, filled_until)
    SELECT 'care', r.id, r.community_id, '-infinity'
    FROM care_reminders r
    WHERE r.id = care_take_planning_mark.reminder AND r.deleted_at IS NULL
      AND r.community_id = ANY ((SELECT app_member_community_ids())::uuid[])
    ON CONFLICT (kind, subject_id) DO UPDATE SET filled_until = '-infinity';
$$;
REVOKE EXECUTE ON FUNCTION care_take_planning_mark(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION care_take_planning_mark(uuid) TO orbitcove_app;
