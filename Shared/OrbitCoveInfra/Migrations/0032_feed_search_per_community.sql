-- The feed's search reads one community's matches, not every community's (issue 22).
--
-- posts_search_index and comments_search_index held every community's words, so a search
-- in one community fetched the rows of every community with those words and dropped the
-- others' afterwards: its cost grew with the whole table, as the answers' policies did
-- before 0027 (the feed benchmark's search fell from 222 to 91 a second once the data
-- directory held three benchmark communities instead of one). The indexes now lead with the
-- community (btree_gin lets a GIN index hold the uuid beside the words), and comments carry
-- their post's community, set when they are written and never changed, so both halves of a
-- search are one index scan within the community.

CREATE EXTENSION IF NOT EXISTS btree_gin;

ALTER TABLE comments ADD COLUMN community_id uuid;
UPDATE comments c SET community_id = p.community_id FROM posts p WHERE p.id = c.post_id;
ALTER TABLE comments ALTER COLUMN community_id SET NOT NULL;

-- A comment is in its post's community, whatever the writer says.
CREATE FUNCTION comments_take_community() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    NEW.community_id := (SELECT p.community_id FROM posts p WHERE p.id = NEW.post_id);
    RETURN NEW;
END $$;
CREATE TRIGGER comments_community BEFORE INSERT ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_take_community();

DROP TRIGGER comments_guard ON comments;
CREATE TRIGGER comments_guard BEFORE UPDATE ON comments
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'post_id', 'author_id', 'created_at', 'community_id');

DROP INDEX posts_search_index;
CREATE INDEX posts_search_index ON posts USING gin (community_id, search_vector) WHERE deleted_at IS NULL;
DROP INDEX comments_search_index;
CREATE INDEX comments_search_index ON comments USING gin (community_id, search_vector) WHERE deleted_at IS NULL;

CREATE OR REPLACE FUNCTION feed_search_hits(community uuid, wanted tsquery)
RETURNS TABLE (post_id uuid, created_at timestamptz, rank real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public ROWS 100 AS $$
    SELECT p.id, p.created_at, ts_rank_cd(p.search_vector, wanted)
    FROM posts p
    WHERE (app_is_system() OR community = ANY (app_member_community_ids()))
      AND p.community_id = community AND p.deleted_at IS NULL AND p.search_vector @@ wanted
    UNION ALL
    SELECT p.id, p.created_at, ts_rank_cd(c.search_vector, wanted) / 2
    FROM comments c JOIN posts p ON p.id = c.post_id
    WHERE (app_is_system() OR community = ANY (app_member_community_ids()))
      AND c.community_id = community AND c.deleted_at IS NULL AND c.search_vector @@ wanted
      AND p.deleted_at IS NULL
$$;
