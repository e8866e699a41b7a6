-- Issue 24: an avatar and a community's icon may be an upload, beside the http(s) URL accepted
-- before. `users.avatar_media_id` names the user's own `avatar` upload, `communities.icon_media_id`
-- the community's own `community_icon` upload; core then writes `avatar_url` / `icon_url` as the
-- media's address (`…/api/v1/media/{id}?variant=thumb`), so every reader that shows an avatar
-- or an icon (member lists, authors, invites) shows it unchanged. Setting a URL clears the id.
--
-- No foreign keys: media rows cascade from communities and name their uploader, so a key back
-- would make a cycle that a community's or a user's deletion walks twice. Triggers say the same:
-- a named upload is checked when named, and an upload deleted or failed clears what names it.

ALTER TABLE users ADD COLUMN avatar_media_id uuid;
ALTER TABLE communities ADD COLUMN icon_media_id uuid;
CREATE INDEX users_avatar_media ON users (avatar_media_id) WHERE avatar_media_id IS NOT NULL;
CREATE INDEX communities_icon_media ON communities (icon_media_id) WHERE icon_media_id IS NOT NULL;

-- A named upload is the row's own, for that use, ready (processed: it cannot fail later) and not
-- deleted.
-- SECURITY DEFINER: the check reads media whatever the caller may see, and refuses the same.
CREATE FUNCTION users_check_avatar_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.avatar_media_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.avatar_media_id IS DISTINCT FROM OLD.avatar_media_id)
       AND NOT EXISTS (SELECT 1 FROM media m
                       WHERE m.id = NEW.avatar_media_id AND m.purpose = 'avatar' AND m.uploaded_by = NEW.id
                         AND m.status = 'ready' AND m.deleted_at IS NULL)
    THEN
        RAISE EXCEPTION 'an avatar names an upload that is not this user''s avatar'
            USING ERRCODE = '23503', CONSTRAINT = 'users_avatar_media';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER users_avatar_media BEFORE INSERT OR UPDATE OF avatar_media_id ON users
    FOR EACH ROW EXECUTE FUNCTION users_check_avatar_media();

CREATE FUNCTION communities_check_icon_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.icon_media_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.icon_media_id IS DISTINCT FROM OLD.icon_media_id)
       AND NOT EXISTS (SELECT 1 FROM media m
                       WHERE m.id = NEW.icon_media_id AND m.purpose = 'community_icon' AND m.community_id = NEW.id
                         AND m.status = 'ready' AND m.deleted_at IS NULL)
    THEN
        RAISE EXCEPTION 'an icon names an upload that is not this community''s icon'
            USING ERRCODE = '23503', CONSTRAINT = 'communities_icon_media';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER communities_icon_media BEFORE INSERT OR UPDATE OF icon_media_id ON communities
    FOR EACH ROW EXECUTE FUNCTION communities_check_icon_media();

-- An upload deleted (by a member, or removed by the sweep) or failed no longer pictures anyone:
-- what names it is cleared with its address, in the same transaction, whoever deleted it (an
-- admin deleting a member's avatar cannot write that member's row, so this is the owner's).
CREATE FUNCTION media_clear_pictures() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    gone uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        gone := OLD.id;
    ELSIF (NEW.deleted_at IS NOT NULL AND OLD.deleted_at IS NULL) OR (NEW.status = 'failed' AND OLD.status <> 'failed') THEN
        gone := NEW.id;
    ELSE
        RETURN NULL;
    END IF;
    IF OLD.purpose = 'avatar' THEN
        UPDATE users SET avatar_media_id = NULL, avatar_url = NULL, updated_at = now() WHERE avatar_media_id = gone;
    ELSIF OLD.purpose = 'community_icon' THEN
        UPDATE communities SET icon_media_id = NULL, icon_url = NULL, updated_at = now() WHERE icon_media_id = gone;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER media_clear_pictures AFTER UPDATE OF deleted_at, status OR DELETE ON media
    FOR EACH ROW EXECUTE FUNCTION media_clear_pictures();

-- The gate's one-statement read (0028, 0030) returns CommunityRecord's columns, now with the icon's
-- upload after its URL. Its result type changes, so it is made again (old core replicas read
-- the columns they know by position: drain them first, as deploy/README.md says of 0026).
DROP FUNCTION app_community_standing(uuid, uuid);
CREATE FUNCTION app_community_standing(community uuid, caller uuid)
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
END $$;

REVOKE EXECUTE ON FUNCTION app_community_standing(uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_community_standing(uuid, uuid) TO orbitcove_app;
