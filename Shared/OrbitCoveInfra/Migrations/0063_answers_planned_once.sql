-- An answer spent about a third of PostgreSQL's time on the answer planning statements again
-- (issue 20; `perf` on the backends and pg_stat_statements' plan counts under
-- `scripts/bench/answers.sh`, BENCHMARKS.md):
--
-- 1. SQL-language functions that are not inlined (a sub-select in a scalar function, SECURITY
--    DEFINER, a SET clause) are planned again on every call: PostgreSQL 15 keeps their plans
--    only for one run of the statement that calls them. Three run on every answer:
--    `app_writes_for` (the outbox's and audit log's WITH CHECK, about 0.5 ms of planning a
--    call: it plans the members read under its policies), `calendar_hold_event`, and
--    `app_trusted_writer` (every guard trigger, three times an answer). PL/pgSQL keeps each
--    statement's plan for the session. The bodies are the same statements. So does
--    `app_is_current_icon`, the one other function a policy calls row by row that PostgreSQL
--    could not inline (`PlannedOnceTests` keeps it so).
-- 2. Two PL/pgSQL statements were planned again on every call anyway: `calendar_answer`'s
--    result (`r.id = answered OR r.id = ANY (moved)`) and `calendar_place_instance`'s UPDATE.
--    PostgreSQL's plan cache compares the generic plan's estimate with the custom plans' and
--    keeps planning custom plans while the generic one looks dearer: an empty `moved` known at
--    planning time makes the custom plan look ten times cheaper, although both plans are the
--    same index scans (EXPLAIN of each, BENCHMARKS.md). These functions, and
--    `calendar_hold_event` (whose custom plan for a single event folds away the instance's
--    half), now say `plan_cache_mode = force_generic_plan`: their statements are planned once
--    per session and run as those index scans for every event and instance.
CREATE OR REPLACE FUNCTION app_writes_for(community uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN community IS NULL OR community = ANY ((SELECT app_member_community_ids())::uuid[]) OR EXISTS (
        SELECT 1 FROM members m
        WHERE m.community_id = community AND m.user_id = app_current_user_id()
          AND (m.left_at IS NULL OR m.left_at >= NOW()));
END $$;

CREATE OR REPLACE FUNCTION app_trusted_writer(relation oid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN app_is_system() OR current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = relation);
END $$;

CREATE OR REPLACE FUNCTION app_is_current_icon(media_id uuid) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM communities c WHERE c.icon_media_id = media_id AND c.deleted_at IS NULL);
END $$;

CREATE OR REPLACE FUNCTION calendar_hold_event(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (rows_now INTEGER, sequences_now BIGINT)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY
    SELECT count(*)::integer, coalesce(sum(r.sequence), 0)::bigint
    FROM (
        SELECT e.sequence FROM events e
        WHERE (e.id = event OR (e.recurrence_parent_id = event AND e.recurrence_id = instance))
          AND e.deleted_at IS NULL
          AND (app_is_system() OR e.community_id = ANY ((SELECT app_member_community_ids())::uuid[]))
        ORDER BY e.recurrence_parent_id NULLS FIRST
        FOR SHARE
    ) r;
END $$;

ALTER FUNCTION calendar_answer(uuid, timestamptz, uuid, uuid, rsvp_status, integer, text, integer, bigint)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION calendar_place_instance(uuid, timestamptz) SET plan_cache_mode = force_generic_plan;
