-- The gate's standing refuses a deleted account whether or not its memberships are still there.
--
-- `app_community_standing` (0081) looked the caller up only when it found no membership, so an
-- account deleted while still a member was answered with its membership row, where every
-- transaction (`app_enter_as_user`) refused it with OCA01 (401 ACCOUNT_DELETED): found by a
-- hostile probe that set `deleted_at` by hand. Account deletion (`RetentionJobs`) ends the
-- memberships in the same transaction, so the service never made that state; the standing now
-- reads the account with the membership (a primary-key probe in the same statement) and refuses
-- it as the entry does. `SecondWallCommunitiesTests.theGatesStandingIsWhatTheWallShows` checks
-- the pair against a transaction entered as the caller.
CREATE OR REPLACE FUNCTION app_community_standing(community uuid, caller uuid)
RETURNS TABLE (
    id uuid, name text, description text, icon_url text, icon_media_id uuid, created_by uuid, member_count integer,
    subscription_status text, settings text, created_at timestamptz, updated_at timestamptz,
    deleted_at timestamptz, creator_is_admin boolean, role text)
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER ROWS 1
SET search_path = public SET lock_timeout = '30s' AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id, c.name::text, c.description, c.icon_url::text, c.icon_media_id, c.created_by, c.member_count,
           c.subscription_status::text, c.settings::text, c.created_at, c.updated_at, c.deleted_at,
           EXISTS (SELECT 1 FROM members cm WHERE cm.community_id = c.id AND cm.user_id = c.created_by
                   AND cm.left_at IS NULL AND cm.role = 'admin'),
           m.role::text
    FROM members m JOIN communities c ON c.id = m.community_id
    JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL
    WHERE m.community_id = community AND m.user_id = caller AND m.left_at IS NULL;
    IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = caller AND u.deleted_at IS NULL) THEN
        RAISE EXCEPTION 'this account has been deleted' USING ERRCODE = 'OCA01';
    END IF;
END $$;
