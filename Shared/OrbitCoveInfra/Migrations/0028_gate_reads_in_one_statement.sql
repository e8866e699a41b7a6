-- The community gate's read in one statement instead of a transaction of four (issue 20;
-- BENCHMARKS.md, "The hot read path").
--
-- On a cache miss, CommunityGate read the community and the caller's role in a transaction of
-- its own: BEGIN, app_enter_as_user, the read, COMMIT. Four round trips before the handler's
-- own transaction began, on every uncached request of every community route (the members page
-- was eight round trips where its two statements need four).
--
-- app_community_standing(community, caller) answers the same question in one statement, in
-- its own implicit transaction: the community and the caller's role, only when the caller is a
-- member now (left_at IS NULL); no row otherwise, for a community that does not exist as for
-- one the caller is not in. That is exactly what communities_read and members_read showed the
-- gate under row-level security (a community is visible to its current members only, and its
-- row carries their role), so the wall is not weaker: the function is the policy's own rule
-- applied to one (community, user) pair, and the services' role could already name any user
-- to app_enter_as_user. Deleted communities are returned to their members, as the policy
-- returns them; the gate decides who may see one (only those who may restore it).
--
-- PL/pgSQL, so the session keeps its plan. The lock wait is bounded here, since an implicit
-- transaction has no `statement_timeout` of Database's: a read of two tables by key waits
-- only behind a migration's exclusive lock.

CREATE FUNCTION app_community_standing(community uuid, caller uuid)
RETURNS TABLE (
    id uuid, name text, description text, icon_url text, created_by uuid, member_count integer,
    subscription_status text, settings text, created_at timestamptz, updated_at timestamptz,
    deleted_at timestamptz, creator_is_admin boolean, role text)
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
SET search_path = public SET lock_timeout = '30s' AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id, c.name::text, c.description, c.icon_url::text, c.created_by, c.member_count,
           c.subscription_status::text, c.settings::text, c.created_at, c.updated_at, c.deleted_at,
           EXISTS (SELECT 1 FROM members cm WHERE cm.community_id = c.id AND cm.user_id = c.created_by
                   AND cm.left_at IS NULL AND cm.role = 'admin'),
           m.role::text
    FROM members m JOIN communities c ON c.id = m.community_id
    WHERE m.community_id = community AND m.user_id = caller AND m.left_at IS NULL;
END $$;

REVOKE EXECUTE ON FUNCTION app_community_standing(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_community_standing(uuid, uuid) TO orbitcove_app;
