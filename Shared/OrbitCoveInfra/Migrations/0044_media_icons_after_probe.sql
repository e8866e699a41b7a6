-- A hostile probe of issue 24's media, after 0043:
-- * Any signed-in user could read every `community_icon` row, also uploads never made a
--   community's icon (a pending one, with its file name). Only a community's current icon is
--   public now (invite previews show it); other icon uploads are the members' like all media.
-- * A member who may not edit a community's settings could insert an icon upload for it in
--   SQL (the API answers 403): an icon upload is an admin's, in the database too.

-- Whether `media_id` is a community's icon right now; owner's rights, as a non-member cannot
-- read the community's row.
CREATE FUNCTION app_is_current_icon(media_id uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT EXISTS (SELECT 1 FROM communities c WHERE c.icon_media_id = media_id AND c.deleted_at IS NULL)
$$;
REVOKE EXECUTE ON FUNCTION app_is_current_icon(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION app_is_current_icon(uuid) TO orbitcove_app;

ALTER POLICY media_read ON media
    USING (app_is_system()
           OR community_id = ANY ((SELECT app_member_community_ids())::uuid[])
           OR (community_id IS NULL AND (uploaded_by = app_current_user_id()
                                         OR uploaded_by IN (SELECT app_fellow_users())))
           OR (purpose = 'community_icon' AND app_current_user_id() IS NOT NULL AND app_is_current_icon(id)));

ALTER POLICY media_create ON media
    WITH CHECK (app_is_system()
                OR (uploaded_by = app_current_user_id() AND status = 'pending' AND deleted_at IS NULL
                    AND storage_path = 'uploads/' || id::text AND variants = '{}'::jsonb
                    AND width IS NULL AND height IS NULL AND thumbnail_path IS NULL AND failure_reason IS NULL
                    AND uploaded_at IS NULL AND processed_at IS NULL
                    AND created_at = now() AND upload_expires_at <= now() + interval '65 minutes'
                    AND (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                         OR community_id IS NULL)
                    AND (purpose <> 'community_icon'
                         OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));
