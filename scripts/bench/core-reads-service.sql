-- The statements core runs for the core read benchmark's two requests, uncached, in order
-- (pgbench variables :user_id, :community and :limit, the page size plus one): each request's
-- gate reads the caller's standing in one statement outside a transaction (CommunityGate.fetch,
-- app_community_standing); the members page is then one statement that enters as the caller
-- (MemberStore.members, MembersPage: app_members_page, migration 0083). Run by
-- scripts/bench/core-read.sh through pgbench and orbitcove-sql-bench; its bypassed run calls the
-- members page's function without its entry, as the schema owner.
SELECT * FROM app_community_standing(:community, :user_id);
SELECT * FROM app_community_standing(:community, :user_id);
SELECT * FROM app_members_page(:user_id, :community, NULL::timestamptz, NULL::uuid, :limit::integer);
