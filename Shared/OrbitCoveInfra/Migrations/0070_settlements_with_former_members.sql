-- A settlement may name a former member of the community (issue 20's hostile probe): a member
-- who leaves keeps their share of what was split before, and an edit of such an expense may
-- still change it, so their debts stay in the balances; but 0037 let a new entry name current
-- members only, so "Ben paid Ada" could never be recorded once Ben had left, and the debt could
-- never be cleared. A settlement's payer and payee are now members or former members (a row in
-- `members`, whatever its `left_at`); an expense's payer is still a current member. Who may
-- record it is unchanged: one of its parties (a current member, as the first condition asks)
-- or an admin.
ALTER POLICY transactions_create ON transactions
    WITH CHECK ((SELECT app_is_system()) OR (
        created_by = (SELECT app_current_user_id())
        AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (type <> 'settlement' OR (SELECT app_current_user_id()) IN (paid_by, paid_to)
             OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                    AND m.user_id = transactions.paid_by AND (m.left_at IS NULL OR type = 'settlement'))
        AND (paid_to IS NULL OR EXISTS (SELECT 1 FROM members m WHERE m.community_id = transactions.community_id
                                        AND m.user_id = transactions.paid_to
                                        AND (m.left_at IS NULL OR type = 'settlement')))));
