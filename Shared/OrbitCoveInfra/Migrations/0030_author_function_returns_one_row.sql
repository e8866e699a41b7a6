-- app_content_author (0029) and app_community_standing (0028) return at most one row, but a
-- set-returning function is estimated at 1,000 rows unless it says otherwise. In the feed's
-- first page (20 posts, each joined to its author) that made the planner expect 23,000 rows
-- and a cost above jit_above_cost, so every feed read and search was JIT-compiled: about 70 ms
-- of compilation for a 6 ms statement (found by the feed benchmark's seed on 3,000 posts).
ALTER FUNCTION app_content_author(uuid, uuid) ROWS 1;
ALTER FUNCTION app_community_standing(uuid, uuid) ROWS 1;
