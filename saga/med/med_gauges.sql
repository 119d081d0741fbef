-- name: Ages
-- The on-call's gauges of the open reports (gauges.go): by age since the
-- DICT created them (analysis_due_at is their CreationTime + 7 days:
-- under a day, a day to 6 days, the 7th day, past the 7 days), those whose
-- refund request is open at the DICT and not answered while nothing
-- changed on them for $1 (not those waiting, nothing returned yet, for the
-- account's credits: their request is closed at their first part or at
-- return_until; nor those whose request's close awaits the PSP, its close
-- marked sent and their dict_problem starting with $2,
-- 'psp_action_awaited:': counted apart, by the Open gauges, their alert a
-- warning; a request taken while its report's own close awaits the PSP is
-- answered by no one and counts), those returning now, and the centavos
-- they returned. From pix_med_reports_open_idx: the open ones only.
SELECT count(*) FILTER (WHERE analysis_due_at > now() + interval '6 days'),
       count(*) FILTER (WHERE analysis_due_at <= now() + interval '6 days' AND analysis_due_at > now() + interval '1 day'),
       count(*) FILTER (WHERE analysis_due_at <= now() + interval '1 day' AND analysis_due_at > now()),
       count(*) FILTER (WHERE analysis_due_at <= now()),
       count(*) FILTER (WHERE refund_request_status = 'OPEN' AND refund_closed_at IS NULL
                          AND NOT (status = 'awaiting_credit' AND returned_cents = 0)
                          AND (refund_close_sent_at IS NULL OR dict_problem IS NULL OR NOT starts_with(dict_problem, $2::text))
                          AND updated_at < now() - $1::interval),
       count(*) FILTER (WHERE status = 'returning'),
       COALESCE(sum(returned_cents), 0)
FROM pix_med_reports WHERE dispatch_due_at IS NOT NULL
