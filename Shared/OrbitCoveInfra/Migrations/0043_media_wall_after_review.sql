-- Review of issue 24 (media), after 0041 and 0042:
-- * A picture named while its upload is being deleted: the check read `media` without a lock, so
--   a PATCH and a delete committing at once could leave an avatar naming a deleted upload (the
--   delete's clearing UPDATE could not see the PATCH's row). The checks now lock the upload
--   `FOR SHARE`, which waits for a delete in flight and then sees it.
-- * A receipt is a `receipt` upload in the database too (0039's key checks only the community).
-- * A member's SQL may not make a pending row that outlives every upload URL (its expiry pinned
--   within the longest a URL lives, `ORBITCOVE_MEDIA_UPLOAD_SECONDS` at most 3600, with five
--   minutes for clocks, and its creation time to the transaction's).
-- * A community's icon is its public face: invite previews show it to people not yet members,
--   so any signed-in user may read an icon's row (and so follow its address).
-- * An upload's key stays in `media_garbage` until its URL has expired (`recheck_until`): a
--   client may still PUT to that URL after the row was processed or deleted (S3 takes it), and
--   the sweep removes the file again until no URL can write it. `queued_at` moves when a key is
--   queued again, and the sweep forgets only the rows it read, as they were.

CREATE OR REPLACE FUNCTION users_check_avatar_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.avatar_media_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.avatar_media_id IS DISTINCT FROM OLD.avatar_media_id)
    THEN
        PERFORM 1 FROM media m
        WHERE m.id = NEW.avatar_media_id AND m.purpose = 'avatar' AND m.uploaded_by = NEW.id
          AND m.status = 'ready' AND m.deleted_at IS NULL
        FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'an avatar names an upload that is not this user''s avatar'
                USING ERRCODE = '23503', CONSTRAINT = 'users_avatar_media';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION communities_check_icon_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.icon_media_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.icon_media_id IS DISTINCT FROM OLD.icon_media_id)
    THEN
        PERFORM 1 FROM media m
        WHERE m.id = NEW.icon_media_id AND m.purpose = 'community_icon' AND m.community_id = NEW.id
          AND m.status = 'ready' AND m.deleted_at IS NULL
        FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'an icon names an upload that is not this community''s icon'
                USING ERRCODE = '23503', CONSTRAINT = 'communities_icon_media';
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

CREATE FUNCTION transactions_check_receipt_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.receipt_media_id IS NOT NULL
       AND (TG_OP = 'INSERT' OR NEW.receipt_media_id IS DISTINCT FROM OLD.receipt_media_id)
       AND NOT EXISTS (SELECT 1 FROM media m
                       WHERE m.id = NEW.receipt_media_id AND m.purpose = 'receipt' AND m.deleted_at IS NULL)
    THEN
        RAISE EXCEPTION 'a receipt names media that is not a receipt'
            USING ERRCODE = '23503', CONSTRAINT = 'transactions_receipt_media';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER transactions_receipt_purpose BEFORE INSERT OR UPDATE OF receipt_media_id ON transactions
    FOR EACH ROW EXECUTE FUNCTION transactions_check_receipt_media();

ALTER POLICY media_create ON media
    WITH CHECK (app_is_system()
                OR (uploaded_by = app_current_user_id() AND status = 'pending' AND deleted_at IS NULL
                    AND storage_path = 'uploads/' || id::text AND variants = '{}'::jsonb
                    AND width IS NULL AND height IS NULL AND thumbnail_path IS NULL AND failure_reason IS NULL
                    AND uploaded_at IS NULL AND processed_at IS NULL
                    AND created_at = now() AND upload_expires_at <= now() + interval '65 minutes'
                    AND (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                         OR community_id IS NULL)));

ALTER POLICY media_read ON media
    USING (app_is_system()
           OR community_id = ANY ((SELECT app_member_community_ids())::uuid[])
           OR (community_id IS NULL AND (uploaded_by = app_current_user_id()
                                         OR uploaded_by IN (SELECT app_fellow_users())))
           OR (purpose = 'community_icon' AND app_current_user_id() IS NOT NULL));

ALTER TABLE media_garbage ADD COLUMN recheck_until timestamptz;

-- Queues keys for removal; an upload's key (`upload`, with its URL's expiry) is checked again
-- until that URL has expired. Queuing a key again moves its `queued_at`.
CREATE FUNCTION media_discard(keys text[], upload text DEFAULT NULL, upload_expires timestamptz DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO media_garbage AS g (storage_key, recheck_until)
    SELECT k, CASE WHEN k = upload THEN upload_expires + interval '5 minutes' END FROM unnest(keys) AS k
    ON CONFLICT (storage_key) DO UPDATE
        SET queued_at = clock_timestamp(),
            recheck_until = greatest(g.recheck_until, EXCLUDED.recheck_until)
$$;
GRANT EXECUTE ON FUNCTION media_discard(text[], text, timestamptz) TO orbitcove_app;

CREATE OR REPLACE FUNCTION media_collect_garbage() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM media_discard(ARRAY(SELECT media_keys(OLD.storage_path, OLD.variants)), OLD.storage_path,
                              OLD.upload_expires_at);
        RETURN OLD;
    END IF;
    -- Variants replaced (processing again) leave their old files behind.
    PERFORM media_discard(ARRAY(SELECT k FROM media_keys(OLD.storage_path, OLD.variants) AS k
                                WHERE k NOT IN (SELECT n FROM media_keys(NEW.storage_path, NEW.variants) AS n)));
    RETURN NEW;
END;
$$;
