-- A token acts only for an account that is there and not deleted.
--
-- app_enter_as_user (0076) refused a deleted account, but let in an id with no account at all:
-- a token signed for a user the database does not have (removed, or restored from a backup
-- taken before the account was made) read as a user without communities, and its writes that
-- name their author (a community, a calendar feed, a family member) were refused by the
-- foreign key, a 500. It now refuses both with OCA01 (401 ACCOUNT_DELETED): one look-up by
-- primary key, as before.
--
-- The community gate's read (app_community_standing, 0028 and 0042) answered a deleted
-- account's token with no row, so its community routes said 404 COMMUNITY_NOT_FOUND where
-- every other route said 401 ACCOUNT_DELETED. When it finds no membership it now looks the
-- caller up and refuses so too; a member's read is unchanged.
CREATE OR REPLACE FUNCTION app_enter_as_user(caller uuid) RETURNS void
LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM users u WHERE u.id = caller AND u.deleted_at IS NULL) THEN
        RAISE EXCEPTION 'this account has been deleted' USING ERRCODE = 'OCA01';
    END IF;
    PERFORM set_config('app.current_user_id', caller::text, true);
    PERFORM app_cache_communities();
END $$;

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
    WHERE m.community_id = community AND m.user_id = caller AND m.left_at IS NULL;
    IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = caller AND u.deleted_at IS NULL) THEN
        RAISE EXCEPTION 'this account has been deleted' USING ERRCODE = 'OCA01';
    END IF;
END $$;
