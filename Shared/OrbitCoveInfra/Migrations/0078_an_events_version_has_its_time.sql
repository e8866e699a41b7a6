-- The calendar window's digest of its rows' versions (EventStore, VersionsDigest) hashes each
-- row's `updated_at` with its `sequence`, and a window read decodes it as a time: an event row
-- always has one (the column's default; the events_version trigger sets it on every change), now
-- said by the column itself, so that no row can drop out of a digest or a window read unseen.
ALTER TABLE events ALTER COLUMN updated_at SET NOT NULL;
