-- An account deleted after its grace period (RetentionJobs.deleteAccount) now also empties its
-- payment handles in every community it was ever in, and drops its phones' push tokens: the
-- handles were still shown to former fellow members as pay links to a Venmo and a PayPal name,
-- and the devices kept the push token beside the account. Accounts already deleted are settled
-- the same way here.
UPDATE members SET payment_handles = '{}'
WHERE payment_handles <> '{}' AND user_id IN (SELECT id FROM users WHERE deleted_at IS NOT NULL);
DELETE FROM devices WHERE user_id IN (SELECT id FROM users WHERE deleted_at IS NOT NULL);
