-- Posts and receipts name uploaded media by id (issue 24), and only media of their own
-- community: a receipt by a foreign key on (community, media), which the pair's uniqueness
-- (0038) makes possible; a post's list (up to ten) by a trigger, since an array cannot carry
-- a foreign key. Routes check first and name the field; these are the second wall.

ALTER TABLE transactions
    ADD COLUMN receipt_media_id uuid,
    ADD CONSTRAINT transactions_receipt_media FOREIGN KEY (community_id, receipt_media_id)
        REFERENCES media (community_id, id) ON DELETE SET NULL (receipt_media_id);
CREATE INDEX transactions_receipt_media ON transactions (receipt_media_id) WHERE receipt_media_id IS NOT NULL;

ALTER TABLE posts
    ADD COLUMN media_ids uuid[] NOT NULL DEFAULT '{}',
    ADD CONSTRAINT posts_media_ids CHECK (cardinality(media_ids) <= 10);

-- Reads past the wall on purpose (the writer may not see a row it names; the answer is only
-- whether every id is its community's post media), so it says no more than yes or no.
CREATE FUNCTION posts_check_media() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF cardinality(NEW.media_ids) > 0 AND EXISTS (
        SELECT 1 FROM unnest(NEW.media_ids) AS named(id)
        WHERE NOT EXISTS (SELECT 1 FROM media m
                          WHERE m.id = named.id AND m.community_id = NEW.community_id AND m.deleted_at IS NULL))
    THEN
        RAISE EXCEPTION 'a post names media of another community, or none'
            USING ERRCODE = '23503', CONSTRAINT = 'posts_media_ids';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER posts_media BEFORE INSERT OR UPDATE OF media_ids ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_check_media();
