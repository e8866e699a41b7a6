-- The feed (issue 22): posts, comments, reactions, polls, pins, mentions and search, on the
-- seed's tables from 0004.
--
-- Counts without a hot row. Reaction and comment counts live in post_counts, written by
-- triggers on reactions and comments in the same transaction as the row they count, so they
-- equal a GROUP BY over the rows at every commit. Each post has up to eight rows there (a
-- slot per reactor, from the last byte of their user id), so 50 members reacting at once
-- queue on eight rows instead of one, and no reaction touches `posts` (whose every update is
-- a change_log row for sync). A read sums a post's slots. The seed's reaction_counts and
-- comment_count columns (and the trigger that kept comment_count on the post row) go.
--
-- A comment added or removed logs its post as changed (sync carries the post's counts with
-- it); a reaction does not (one change_log row per reaction would flood sync), so reaction
-- counts reach a client when it reads the feed or the post, or with the post's next change.

CREATE EXTENSION IF NOT EXISTS unaccent;

DROP TRIGGER trigger_comment_count ON comments;
DROP FUNCTION update_comment_count();

ALTER TABLE posts
    DROP COLUMN reaction_counts,
    DROP COLUMN comment_count,
    ADD COLUMN mentions uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN pinned_at timestamptz,
    ADD COLUMN pinned_until timestamptz,
    ADD COLUMN search_vector tsvector,
    ADD CONSTRAINT posts_content_length CHECK (char_length(content) <= 10000),
    ADD CONSTRAINT posts_pin_shape CHECK (is_pinned OR (pinned_at IS NULL AND pinned_until IS NULL));
ALTER TABLE posts ALTER COLUMN type SET NOT NULL, ALTER COLUMN is_pinned SET NOT NULL,
    ALTER COLUMN is_announcement SET NOT NULL, ALTER COLUMN media_urls SET NOT NULL,
    ALTER COLUMN created_at SET NOT NULL, ALTER COLUMN updated_at SET NOT NULL;

-- The feed's order (newest first, by id within a microsecond) and its pinned lead.
DROP INDEX idx_posts_community;
CREATE INDEX posts_feed ON posts (community_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
DROP INDEX idx_posts_pinned;
CREATE INDEX posts_pinned ON posts (community_id, pinned_at DESC) WHERE is_pinned AND deleted_at IS NULL;
-- Retention finds soft-deleted posts and comments by age.
CREATE INDEX posts_deleted ON posts (deleted_at) WHERE deleted_at IS NOT NULL;

ALTER TABLE comments
    ADD COLUMN mentions uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN search_vector tsvector,
    ADD CONSTRAINT comments_content_length CHECK (char_length(content) <= 2000);
ALTER TABLE comments ALTER COLUMN created_at SET NOT NULL, ALTER COLUMN updated_at SET NOT NULL;
DROP INDEX idx_comments_post;
CREATE INDEX comments_thread ON comments (post_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX comments_deleted ON comments (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX comments_parent ON comments (parent_id) WHERE parent_id IS NOT NULL;

-- One vote row per (poll, person, option), as the seed's prose says.
ALTER TABLE poll_votes
    ADD CONSTRAINT poll_votes_once UNIQUE (post_id, user_id, option_index),
    ADD CONSTRAINT poll_votes_option CHECK (option_index BETWEEN 0 AND 19);
DROP INDEX idx_poll_votes_post;

-- Counts ---------------------------------------------------------------------------------
CREATE TABLE post_counts (
    post_id uuid NOT NULL REFERENCES posts(id) ON DELETE CASCADE,
    slot smallint NOT NULL CHECK (slot BETWEEN 0 AND 7),
    likes integer NOT NULL DEFAULT 0,
    loves integer NOT NULL DEFAULT 0,
    laughs integer NOT NULL DEFAULT 0,
    celebrates integer NOT NULL DEFAULT 0,
    comments integer NOT NULL DEFAULT 0,
    PRIMARY KEY (post_id, slot)
);
ALTER TABLE post_counts ENABLE ROW LEVEL SECURITY;
-- Readable with the post; written only by the triggers below (the owner's), never by a member.
CREATE POLICY post_counts_read ON post_counts FOR SELECT
    USING (app_is_system() OR EXISTS (SELECT 1 FROM posts p WHERE p.id = post_counts.post_id));

-- Adds `delta` to one count of `post`, in the slot of `person`.
CREATE FUNCTION post_count_add(post uuid, person uuid, what text, delta integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    place smallint := get_byte(uuid_send(person), 15) & 7;
BEGIN
    IF delta > 0 THEN
        INSERT INTO post_counts AS c (post_id, slot, likes, loves, laughs, celebrates, comments)
        VALUES (post, place, (what = 'like')::int * delta, (what = 'love')::int * delta,
                (what = 'laugh')::int * delta, (what = 'celebrate')::int * delta, (what = 'comment')::int * delta)
        ON CONFLICT (post_id, slot) DO UPDATE SET
            likes = c.likes + excluded.likes, loves = c.loves + excluded.loves, laughs = c.laughs + excluded.laughs,
            celebrates = c.celebrates + excluded.celebrates, comments = c.comments + excluded.comments;
    ELSE
        -- A row being removed was counted, so its slot exists (unless its post is going too).
        UPDATE post_counts SET
            likes = likes + (what = 'like')::int * delta, loves = loves + (what = 'love')::int * delta,
            laughs = laughs + (what = 'laugh')::int * delta,
            celebrates = celebrates + (what = 'celebrate')::int * delta,
            comments = comments + (what = 'comment')::int * delta
        WHERE post_id = post AND slot = place;
    END IF;
END $$;

CREATE FUNCTION post_count_reaction() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM post_count_add(OLD.post_id, OLD.user_id, OLD.type::text, -1); END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN PERFORM post_count_add(NEW.post_id, NEW.user_id, NEW.type::text, 1); END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER reactions_count AFTER INSERT OR DELETE ON reactions
    FOR EACH ROW EXECUTE FUNCTION post_count_reaction();
CREATE TRIGGER reactions_count_change AFTER UPDATE ON reactions
    FOR EACH ROW WHEN (OLD.type IS DISTINCT FROM NEW.type) EXECUTE FUNCTION post_count_reaction();

-- A comment counts while it is not deleted; its post is logged as changed when the count moves.
CREATE FUNCTION post_count_comment() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    was boolean := TG_OP <> 'INSERT' AND OLD.deleted_at IS NULL;
    is_now boolean := TG_OP <> 'DELETE' AND NEW.deleted_at IS NULL;
    row_post uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.post_id ELSE NEW.post_id END;
    row_author uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.author_id ELSE NEW.author_id END;
BEGIN
    IF was = is_now THEN RETURN NULL; END IF;
    PERFORM post_count_add(row_post, row_author, 'comment', CASE WHEN is_now THEN 1 ELSE -1 END);
    INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
    SELECT p.community_id, 'post', p.id, 'update' FROM posts p WHERE p.id = row_post AND p.deleted_at IS NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER comments_count AFTER INSERT OR UPDATE OF deleted_at OR DELETE ON comments
    FOR EACH ROW EXECUTE FUNCTION post_count_comment();

-- Who wrote it, as the reader may see them --------------------------------------------------
-- users_read shows a member only their fellow members, so the author of an old post who has
-- since left would vanish from it. This returns the author's name and avatar to a member of
-- the community the content is in, for an author who is or was a member of it: no more than
-- the content itself already says.
CREATE FUNCTION app_content_author(author uuid, community uuid)
RETURNS TABLE (display_name text, avatar_url text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT u.display_name::text, u.avatar_url::text FROM users u
    WHERE u.id = author
      AND (app_is_system() OR community = ANY (app_member_community_ids()))
      AND EXISTS (SELECT 1 FROM members m WHERE m.user_id = author AND m.community_id = community)
$$;

-- Mentions: who has been told, per post or comment ----------------------------------------
CREATE TABLE mentions (
    subject_id uuid NOT NULL,
    user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    post_id uuid NOT NULL REFERENCES posts(id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT NOW(),
    PRIMARY KEY (subject_id, user_id)
);
CREATE INDEX mentions_post ON mentions (post_id);
ALTER TABLE mentions ENABLE ROW LEVEL SECURITY;
CREATE POLICY mentions_read ON mentions FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY mentions_write ON mentions FOR INSERT
    WITH CHECK (app_is_system()
                OR (community_id = ANY ((SELECT app_member_community_ids())::uuid[])
                    AND EXISTS (SELECT 1 FROM posts p WHERE p.id = mentions.post_id
                                AND p.community_id = mentions.community_id)));

-- The policies of the post's rows find their post by key (as 0027 did for answers) -------
ALTER POLICY reactions_read ON reactions
    USING (app_is_system() OR EXISTS (SELECT 1 FROM posts p WHERE p.id = reactions.post_id));
ALTER POLICY reactions_write ON reactions
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id()
                AND EXISTS (SELECT 1 FROM posts p WHERE p.id = reactions.post_id)));
ALTER POLICY reactions_change ON reactions
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id()
                AND EXISTS (SELECT 1 FROM posts p WHERE p.id = reactions.post_id)));
ALTER POLICY poll_votes_read ON poll_votes
    USING (app_is_system() OR EXISTS (SELECT 1 FROM posts p WHERE p.id = poll_votes.post_id));
ALTER POLICY poll_votes_write ON poll_votes
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id()
                AND EXISTS (SELECT 1 FROM posts p WHERE p.id = poll_votes.post_id)));
ALTER POLICY poll_votes_change ON poll_votes
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id()
                AND EXISTS (SELECT 1 FROM posts p WHERE p.id = poll_votes.post_id)));
ALTER POLICY comments_read ON comments
    USING (app_is_system() OR EXISTS (SELECT 1 FROM posts p WHERE p.id = comments.post_id));
ALTER POLICY comments_write ON comments
    WITH CHECK (app_is_system() OR (author_id = app_current_user_id()
                AND EXISTS (SELECT 1 FROM posts p WHERE p.id = comments.post_id)));
ALTER POLICY comments_change ON comments
    USING (app_is_system() OR author_id = app_current_user_id()
           OR EXISTS (SELECT 1 FROM posts p WHERE p.id = comments.post_id
                      AND p.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
    WITH CHECK (app_is_system() OR EXISTS (SELECT 1 FROM posts p WHERE p.id = comments.post_id));
ALTER POLICY comments_delete ON comments
    USING (app_is_system() OR author_id = app_current_user_id()
           OR EXISTS (SELECT 1 FROM posts p WHERE p.id = comments.post_id
                      AND p.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])));

-- Search ----------------------------------------------------------------------------------
-- Words in the community's language (settings.searchLanguage, `simple` by default), accents
-- folded, plus every pair of neighbouring characters in runs of Japanese, Chinese or Korean
-- script, which has no spaces between words: a query's runs must contain all of their pairs.
CREATE FUNCTION feed_search_config(community uuid) RETURNS regconfig
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT coalesce(
        (SELECT t.oid::regconfig FROM pg_ts_config t JOIN pg_namespace n ON n.oid = t.cfgnamespace
         WHERE n.nspname = 'pg_catalog'
           AND t.cfgname = (SELECT c.settings ->> 'searchLanguage' FROM communities c WHERE c.id = community)),
        'pg_catalog.simple'::regconfig)
$$;

CREATE FUNCTION feed_cjk_pairs(body text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT coalesce(array_agg(DISTINCT substr(m.run[1], i, 2)), '{}')
    FROM regexp_matches(body, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', 'g') AS m(run),
         generate_series(1, greatest(char_length(m.run[1]) - 1, 1)) AS i
$$;

CREATE FUNCTION feed_search_vector(config regconfig, body text) RETURNS tsvector
LANGUAGE sql STABLE AS $$
    SELECT to_tsvector(config, unaccent(coalesce(body, ''))) || array_to_tsvector(feed_cjk_pairs(coalesce(body, '')))
$$;

-- What a member typed, as a query: websearch syntax (quotes, OR, minus; never an error) over
-- the words outside CJK runs, and all pairs of each run. NULL when nothing is left to find.
CREATE FUNCTION feed_search_query(config regconfig, typed text) RETURNS tsquery
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cjk constant text := '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+';
    words tsquery := websearch_to_tsquery(config, unaccent(regexp_replace(typed, cjk, ' ', 'g')));
    pairs text[] := feed_cjk_pairs(typed);
    wanted tsquery;
BEGIN
    IF cardinality(pairs) > 0 THEN
        wanted := array_to_string(ARRAY(SELECT quote_literal(p) FROM unnest(pairs) AS p), ' & ')::tsquery;
        IF numnode(words) > 0 THEN wanted := words && wanted; END IF;
        RETURN wanted;
    END IF;
    RETURN CASE WHEN numnode(words) > 0 THEN words END;
END $$;

CREATE FUNCTION posts_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := feed_search_vector(feed_search_config(NEW.community_id),
        concat_ws(' ', NEW.content, NEW.poll_data ->> 'question',
                  (SELECT string_agg(o, ' ') FROM jsonb_array_elements_text(
                      CASE WHEN jsonb_typeof(NEW.poll_data -> 'options') = 'array' THEN NEW.poll_data -> 'options'
                           ELSE '[]'::jsonb END) AS o)));
    RETURN NEW;
END $$;
CREATE TRIGGER posts_search BEFORE INSERT OR UPDATE OF content, poll_data ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_search_vector();

CREATE FUNCTION comments_search_vector() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    NEW.search_vector := feed_search_vector(
        feed_search_config((SELECT p.community_id FROM posts p WHERE p.id = NEW.post_id)), NEW.content);
    RETURN NEW;
END $$;
CREATE TRIGGER comments_search BEFORE INSERT OR UPDATE OF content ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_search_vector();

CREATE INDEX posts_search_index ON posts USING gin (search_vector) WHERE deleted_at IS NULL;
CREATE INDEX comments_search_index ON comments USING gin (search_vector) WHERE deleted_at IS NULL;

-- A community's new search language applies to what it has already written.
CREATE FUNCTION communities_search_language_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    UPDATE posts SET search_vector = feed_search_vector(feed_search_config(NEW.id),
        concat_ws(' ', content, poll_data ->> 'question'))
    WHERE community_id = NEW.id;
    UPDATE comments c SET search_vector = feed_search_vector(feed_search_config(NEW.id), c.content)
    FROM posts p WHERE p.id = c.post_id AND p.community_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER communities_search_language AFTER UPDATE OF settings ON communities
    FOR EACH ROW WHEN (OLD.settings ->> 'searchLanguage' IS DISTINCT FROM NEW.settings ->> 'searchLanguage')
    EXECUTE FUNCTION communities_search_language_changed();

-- A change to a post's search vector alone is not a change a client syncs.
DROP TRIGGER trigger_change_log ON posts;
CREATE TRIGGER trigger_change_log AFTER INSERT OR DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION log_community_change('post');
CREATE TRIGGER trigger_change_log_update AFTER UPDATE ON posts
    FOR EACH ROW WHEN ((to_jsonb(OLD) - 'search_vector') IS DISTINCT FROM (to_jsonb(NEW) - 'search_vector'))
    EXECUTE FUNCTION log_community_change('post');

-- Notifications: an announcement (which may break through quiet hours) and a comment on
-- one's post or a reply to one's comment.
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'announcement';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'post_comment';
