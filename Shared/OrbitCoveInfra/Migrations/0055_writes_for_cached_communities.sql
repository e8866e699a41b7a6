-- app_writes_for (0053) read the caller's memberships live, where every other policy reads
-- those of the transaction's start (app_enter_as_user): a member removed by an admin while
-- their own request ran got past the content's policy and was then refused the message, a
-- 500 where the content's own refusal says 403 or 404 (found by a review). It now takes the
-- same communities first; a live row still covers one joined or left in this very transaction.
CREATE OR REPLACE FUNCTION app_writes_for(community uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT community IS NULL OR community = ANY ((SELECT app_member_community_ids())::uuid[]) OR EXISTS (
        SELECT 1 FROM members m
        WHERE m.community_id = community AND m.user_id = app_current_user_id()
          AND (m.left_at IS NULL OR m.left_at >= NOW()))
$$;
