-- Review of issue 24's first pass:
-- * A post keeps naming a photo deleted since: the trigger checked every id on every update
--   that set `media_ids`, so editing the text of a post whose photo was deleted failed. Only
--   ids a write adds are checked now, and only media uploaded as a post's photo.
-- * The INSERT policy pinned only status and deletion: a member writing SQL could have made a
--   row naming another community's files in `variants`, which the sweep would then remove.
--   A new row is now exactly what an upload request makes: its own upload key, nothing else.

CREATE OR REPLACE FUNCTION posts_check_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF cardinality(NEW.media_ids) > 0 AND EXISTS (
        SELECT 1 FROM unnest(NEW.media_ids) AS named(id)
        WHERE (TG_OP = 'INSERT' OR named.id <> ALL (OLD.media_ids))
          AND NOT EXISTS (SELECT 1 FROM media m
                          WHERE m.id = named.id AND m.community_id = NEW.community_id AND m.purpose = 'post'
                            AND m.deleted_at IS NULL))
    THEN
        RAISE EXCEPTION 'a post names media that is not a photo of its community'
            USING ERRCODE = '23503', CONSTRAINT = 'posts_media_ids';
    END IF;
    RETURN NEW;
END;
$$;

ALTER POLICY media_create ON media
    WITH CHECK (app_is_system()
                OR (uploaded_by = app_current_user_id() AND status = 'pending' AND deleted_at IS NULL
                    AND storage_path = 'uploads/' || id::text AND variants = '{}'::jsonb
                    AND width IS NULL AND height IS NULL AND thumbnail_path IS NULL AND failure_reason IS NULL
                    AND uploaded_at IS NULL AND processed_at IS NULL
                    AND (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                         OR community_id IS NULL)));
