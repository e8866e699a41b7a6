-- The statements core runs for the core read benchmark's two requests, uncached, in order
-- (pgbench variables :user_id, :community and :limit, the page size plus one): each request's
-- gate reads the caller's standing in one statement outside a transaction (CommunityGate.fetch,
-- app_community_standing); the members page then reads in a transaction entered as the caller
-- (Database.transaction(userId:): BEGIN, EnterAsUser, MembersPage, COMMIT). Run by
-- scripts/bench/core-read.sh through pgbench and orbitcove-sql-bench; its bypassed run swaps
-- the entry for set_config('app.current_user_id', ...) alone, as the schema owner.
SELECT * FROM app_community_standing(:community, :user_id);
SELECT * FROM app_community_standing(:community, :user_id);
BEGIN;
SELECT app_enter_as_user(:user_id), set_config('statement_timeout', '30s', true);
SELECT m.user_id, u.display_name, u.avatar_url, m.nickname, m.role::text, m.user_id = c.created_by AS is_creator,
       m.joined_at, m.id
FROM members m JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
WHERE m.community_id = :community AND m.left_at IS NULL
ORDER BY m.joined_at ASC, m.id ASC
LIMIT :limit;
COMMIT;
