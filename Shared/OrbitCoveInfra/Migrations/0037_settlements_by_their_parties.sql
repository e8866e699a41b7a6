-- A settlement is recorded by one of its two parties or an admin, as the API has it (issue 23,
-- found by a hostile probe): 0035's policies let any member write "C paid A" in SQL. And a new
-- entry's payer and payee are current members; an edit may keep a payer who has since left.
-- A split's member is a member or was one (0036 asked for a current member, which refused an
-- edit that splits a new total again among the same people after one of them had left); the
-- API lets only current members into a split.
ALTER POLICY transactions_create ON transactions
    WITH CHECK (app_is_system() OR (
        created_by = app_current_user_id()
        AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (type <> 'settlement' OR app_current_user_id() IN (paid_by, paid_to)
             OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                    AND m.user_id = transactions.paid_by AND m.left_at IS NULL)
        AND (paid_to IS NULL OR EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                                        AND m.user_id = transactions.paid_to AND m.left_at IS NULL))));
ALTER POLICY transactions_change ON transactions
    WITH CHECK (app_is_system() OR (
        community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (type <> 'settlement' OR app_current_user_id() IN (paid_by, paid_to)
             OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));

ALTER POLICY splits_write ON splits
    WITH CHECK (app_is_system() OR EXISTS (
        SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id
          AND (t.created_by = app_current_user_id()
               OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
          AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = t.community_id
                      AND m.user_id = splits.user_id)));
