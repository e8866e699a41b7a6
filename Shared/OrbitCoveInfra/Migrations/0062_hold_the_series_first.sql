-- `calendar_hold_event` (0061) locked an instance's rows in whatever order the scan returned
-- them: an answer to an overridden instance could hold the override and wait for the series,
-- while a removal of the series held the series' row (it locks it first) and waited for the
-- override (it deletes the overrides with it): a deadlock, one of them answered 500 (found on
-- reading 0061 again). Now the series' (or single event's) row is locked first, as every
-- writer takes it, then the override.
CREATE OR REPLACE FUNCTION calendar_hold_event(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (rows_now INTEGER, sequences_now BIGINT)
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    SELECT count(*)::integer, coalesce(sum(r.sequence), 0)::bigint
    FROM (
        SELECT e.sequence FROM events e
        WHERE (e.id = event OR (e.recurrence_parent_id = event AND e.recurrence_id = instance))
          AND e.deleted_at IS NULL
          AND (app_is_system() OR e.community_id = ANY ((SELECT app_member_community_ids())::uuid[]))
        ORDER BY e.recurrence_parent_id NULLS FIRST
        FOR SHARE
    ) r
$$;
