-- Four gaps in the second wall that a hostile probe found as the services' role, entered as a
-- user of another community (each now in SecondWallTests or FinanceSecondWallTests):
--
-- 1. The answer counts' helpers (0020, 0026) are SECURITY DEFINER and were executable by
--    anyone: a caller could set any event's counts. Only the answers trigger (its owner's)
--    calls them.
REVOKE EXECUTE ON FUNCTION count_answer_delta(uuid, timestamptz, integer, integer, integer, integer, integer)
    FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION count_instance_answers(uuid, timestamptz) FROM PUBLIC;

-- 2. A message a user's transaction adds to the outbox (0017) is about one of their own
--    communities (or none): Eve could announce a post to Ada's club. "Their own" includes one
--    they left in this very transaction (its members hear that they left).
CREATE FUNCTION app_writes_for(community uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT community IS NULL OR EXISTS (
        SELECT 1 FROM members m
        WHERE m.community_id = community AND m.user_id = app_current_user_id()
          AND (m.left_at IS NULL OR m.left_at >= NOW()))
$$;
ALTER POLICY outbox_append ON outbox
    WITH CHECK (app_is_system() OR (actor_id = app_current_user_id() AND app_writes_for(community_id)));

-- 3. So is an audit entry (0017): Eve could write "member.removed" into Ada's club's log.
ALTER POLICY audit_append ON audit_log
    WITH CHECK (app_is_system() OR (user_id = app_current_user_id() AND app_writes_for(community_id)));

-- 4. An edited ledger entry's payer and payee are someone of the community, current or former
--    (an edit may keep a payer who has since left, 0037): an edit could make anyone the payer.
ALTER POLICY transactions_change ON transactions
    WITH CHECK (app_is_system() OR (
        community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (type <> 'settlement' OR app_current_user_id() IN (paid_by, paid_to)
             OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                    AND m.user_id = transactions.paid_by)
        AND (paid_to IS NULL OR EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                                        AND m.user_id = transactions.paid_to))));
