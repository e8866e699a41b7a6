-- The feed's search finds its rows through the GIN indexes (issue 22; BENCHMARKS.md, "Feed").
--
-- Under row-level security PostgreSQL applies a table's policy before any condition of the
-- query that is not leakproof, and the text search match (`@@`) is not: so as the services'
-- role a search could not use posts_search_index or comments_search_index, and read all
-- 50,000 posts and 25,000 comments of the benchmark's community to test each one (200 ms a
-- search, where the same statement past the policies took 1 ms in the index).
--
-- feed_search_hits(community, query) does the matching as the owner, with the policy's own
-- rule written into it: a community the caller is not a member of (posts_read's rule) has no
-- hits. It returns only ids, times and ranks; the posts themselves are then read under the
-- caller's row-level security as every other read is.
CREATE FUNCTION feed_search_hits(community uuid, wanted tsquery)
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
      AND p.community_id = community AND p.deleted_at IS NULL AND c.deleted_at IS NULL
      AND c.search_vector @@ wanted
$$;
REVOKE EXECUTE ON FUNCTION feed_search_hits(uuid, tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION feed_search_hits(uuid, tsquery) TO orbitcove_app;
