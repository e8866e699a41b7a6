-- A settlement is recorded by one of its two parties or an admin, as the API has it (issue 23,
-- found by a hostile probe): 0035's policies let any member write "C paid A" in SQL. And a new
-- entry's payer and payee are current members (a split's member already must be, 0036); an
-- edit may keep a payer who has since left.
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
