-- +goose Up
-- A cancelled scheduled PIX stays due for its dispatcher until its run is
-- woken (saga/scheduled: the cancel's wake-up is durable). The cancel
-- signals the run at once (DELETE /pix/scheduled/{id}); a signal lost
-- (Temporal unreachable, or its client still reconnecting) left the run
-- asleep until the PIX's date, "Running" for a cancelled PIX. The cancel
-- now leaves the row due (Conclude: dispatch_due_at = now() on a cancel),
-- and the dispatcher signals the run, retrying until it is delivered or no
-- run is open, then clears it. 0018's check held a row due only while
-- scheduled; a cancelled row may now be due too, an executed or failed one
-- still never.
--
-- Added NOT VALID: the new check is weaker than the one it replaces, so
-- every row there holds it, and the table is not read under the lock.
ALTER TABLE pix_scheduled DROP CONSTRAINT pix_scheduled_due_while_scheduled;
ALTER TABLE pix_scheduled ADD CONSTRAINT pix_scheduled_due_while_scheduled_or_cancelled CHECK (
    CASE status WHEN 'scheduled' THEN dispatch_due_at IS NOT NULL
                WHEN 'cancelled' THEN true
                ELSE dispatch_due_at IS NULL END) NOT VALID;
