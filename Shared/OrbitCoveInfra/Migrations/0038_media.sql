-- Media (issue 24): uploads through signed URLs, processed by the media service, served to the
-- members of the media's community through signed URLs, files removed by a sweep.
--
-- A row's life: `pending` (the upload URL was handed out; the server chose `storage_path`),
-- `uploaded` (the bytes arrived with the declared size and SHA-256; a `media-processing` job
-- was queued in the same transaction), then `ready` (variants made, `variants` says where) or
-- `failed` (`failure_reason` says why). A member deletes by setting `deleted_at`; the sweep
-- then removes the row, and every key a removed row held goes to `media_garbage` in the same
-- transaction (a trigger), also when a community's deletion cascades to its media, so no file
-- outlives its row by more than one sweep.
--
-- An avatar belongs to its user, not to a community: its `community_id` is null, and it is
-- visible to its owner and to everyone who shares a community with them (as the profile is).

ALTER TABLE media
    ALTER COLUMN community_id DROP NOT NULL,
    ALTER COLUMN created_at SET NOT NULL,
    ADD COLUMN purpose text NOT NULL,
    ADD COLUMN status text NOT NULL DEFAULT 'pending',
    ADD COLUMN failure_reason text,
    ADD COLUMN checksum bytea NOT NULL,
    ADD COLUMN variants jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN upload_expires_at timestamptz NOT NULL,
    ADD COLUMN uploaded_at timestamptz,
    ADD COLUMN processed_at timestamptz,
    ADD COLUMN deleted_at timestamptz,
    ADD CONSTRAINT media_purpose CHECK (purpose IN ('post', 'receipt', 'avatar', 'community_icon')),
    ADD CONSTRAINT media_status CHECK (status IN ('pending', 'uploaded', 'ready', 'failed')),
    ADD CONSTRAINT media_owner CHECK ((purpose = 'avatar') = (community_id IS NULL)),
    ADD CONSTRAINT media_checksum CHECK (octet_length(checksum) = 32),
    ADD CONSTRAINT media_size CHECK (size_bytes BETWEEN 1 AND 104857600),
    ADD CONSTRAINT media_failure CHECK ((status = 'failed') = (failure_reason IS NOT NULL)),
    ADD CONSTRAINT media_filename CHECK (char_length(filename) BETWEEN 1 AND 255
                                         AND filename !~ '[/\\[:cntrl:]]'),
    -- Posts and receipts name media by (community, id), so one of another community cannot be named.
    ADD CONSTRAINT media_in_community UNIQUE (community_id, id);

DROP INDEX idx_media_community;
CREATE INDEX media_community ON media (community_id, created_at DESC) WHERE deleted_at IS NULL;
CREATE INDEX media_uploader ON media (uploaded_by);
-- The sweep's work: deleted rows, and uploads that never came.
CREATE INDEX media_sweep_deleted ON media (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX media_sweep_abandoned ON media (upload_expires_at) WHERE status = 'pending';

-- Keys whose files are to be removed from storage. The sweep deletes each file, then its row.
CREATE TABLE media_garbage (
    storage_key text PRIMARY KEY,
    queued_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE media_garbage ENABLE ROW LEVEL SECURITY;
CREATE POLICY media_garbage_system ON media_garbage FOR ALL
    USING (app_is_system()) WITH CHECK (app_is_system());
GRANT SELECT, INSERT, DELETE ON media_garbage TO orbitcove_app;

-- Every key a media row holds: the upload itself and each variant's.
CREATE FUNCTION media_keys(row_storage_path text, row_variants jsonb) RETURNS SETOF text
LANGUAGE sql IMMUTABLE AS $$
    SELECT row_storage_path
    UNION
    SELECT v ->> 'key' FROM jsonb_each(row_variants) AS e(name, v) WHERE v ->> 'key' IS NOT NULL
$$;

CREATE FUNCTION media_collect_garbage() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO media_garbage (storage_key)
        SELECT k FROM media_keys(OLD.storage_path, OLD.variants) AS k
        ON CONFLICT DO NOTHING;
        RETURN OLD;
    END IF;
    -- Variants replaced (processing again) leave their old files behind.
    INSERT INTO media_garbage (storage_key)
    SELECT k FROM media_keys(OLD.storage_path, OLD.variants) AS k
    WHERE k NOT IN (SELECT n FROM media_keys(NEW.storage_path, NEW.variants) AS n)
    ON CONFLICT DO NOTHING;
    RETURN NEW;
END;
$$;
CREATE TRIGGER media_garbage_on_delete AFTER DELETE ON media
    FOR EACH ROW EXECUTE FUNCTION media_collect_garbage();
CREATE TRIGGER media_garbage_on_change AFTER UPDATE OF storage_path, variants ON media
    FOR EACH ROW EXECUTE FUNCTION media_collect_garbage();

-- A row's identity and its bytes' description never change once declared.
DROP TRIGGER media_guard ON media;
CREATE TRIGGER media_guard BEFORE UPDATE ON media
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns(
        'id', 'community_id', 'uploaded_by', 'created_at', 'purpose', 'type', 'checksum', 'size_bytes', 'mime_type',
        'filename', 'storage_path');

-- The wall. Members read their community's media; an avatar is read by its owner and by those
-- who share a community with them. Only the uploader creates, for themselves, in a community
-- they belong to. Changes (the soft delete) by the uploader or the community's admins; status
-- and variants are written by the system (the media service's upload check and worker).
DROP POLICY media_read ON media;
DROP POLICY media_create ON media;
DROP POLICY media_change ON media;
DROP POLICY media_delete ON media;
CREATE POLICY media_read ON media FOR SELECT
    USING (app_is_system()
           OR community_id = ANY ((SELECT app_member_community_ids())::uuid[])
           OR (community_id IS NULL AND (uploaded_by = app_current_user_id()
                                         OR uploaded_by IN (SELECT app_fellow_users()))));
CREATE POLICY media_create ON media FOR INSERT
    WITH CHECK (app_is_system()
                OR (uploaded_by = app_current_user_id() AND status = 'pending' AND deleted_at IS NULL
                    AND (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                         OR community_id IS NULL)));
CREATE POLICY media_change ON media FOR UPDATE
    USING (app_is_system()
           OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[])
           OR (uploaded_by = app_current_user_id()
               AND (community_id IS NULL OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]))))
    WITH CHECK (TRUE);
CREATE POLICY media_delete ON media FOR DELETE
    USING (app_is_system());

-- What a member may change is the deletion mark alone; the rest is the system's.
CREATE FUNCTION media_guard_user_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT app_is_system() AND (NEW.status IS DISTINCT FROM OLD.status
                                OR NEW.failure_reason IS DISTINCT FROM OLD.failure_reason
                                OR NEW.variants IS DISTINCT FROM OLD.variants
                                OR NEW.width IS DISTINCT FROM OLD.width
                                OR NEW.height IS DISTINCT FROM OLD.height
                                OR NEW.thumbnail_path IS DISTINCT FROM OLD.thumbnail_path
                                OR NEW.uploaded_at IS DISTINCT FROM OLD.uploaded_at
                                OR NEW.processed_at IS DISTINCT FROM OLD.processed_at
                                OR NEW.upload_expires_at IS DISTINCT FROM OLD.upload_expires_at
                                OR (OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS DISTINCT FROM OLD.deleted_at))
    THEN
        RAISE EXCEPTION 'only the media service changes a file''s processing' USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER media_user_changes BEFORE UPDATE ON media
    FOR EACH ROW EXECUTE FUNCTION media_guard_user_changes();

-- Ready or failed: the notifications service hears it (the post shows the photo; realtime
-- carries it to phones). No one is notified, so no notification type is added.
