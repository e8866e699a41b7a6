-- The statements of the core read benchmark's two requests as core ran them before migration
-- 0028 (the gate's community read and the members page, each in a transaction entered as the
-- caller; pgbench variables :user_id and :community), kept as they were for
-- scripts/bench/second-wall.sh, whose bypassed run swaps app_enter_as_user for
-- set_config('app.current_user_id', ...). What core runs now is core-reads-service.sql.
BEGIN;
SELECT app_enter_as_user(:user_id);
SELECT c.id, c.name, c.description, c.icon_url, c.created_by, c.member_count, c.subscription_status::text,
       c.settings::text, c.created_at, c.updated_at, c.deleted_at,
       EXISTS (SELECT 1 FROM members cm WHERE cm.community_id = c.id AND cm.user_id = c.created_by
               AND cm.left_at IS NULL AND cm.role = 'admin'),
       m.role::text
FROM communities c
LEFT JOIN members m ON m.community_id = c.id AND m.user_id = :user_id::uuid AND m.left_at IS NULL
WHERE c.id = :community;
COMMIT;
BEGIN;
SELECT app_enter_as_user(:user_id);
SELECT m.user_id, u.display_name, u.avatar_url, m.nickname, m.role::text, m.user_id = c.created_by, m.joined_at, m.id
FROM members m JOIN users u ON u.id = m.user_id JOIN communities c ON c.id = m.community_id
WHERE m.community_id = :community AND m.left_at IS NULL
ORDER BY m.joined_at, m.id
LIMIT 21;
COMMIT;
