-- +goose Up
-- MED as the credited participant (Resolução BCB 103/2021, MED 2.0;
-- saga/med, docs/med.md): an infraction report of the DICT about a PIX we
-- credited, one row per report (the DICT's id), its saga pix-med:<id>.
-- The money is held by the core's holds (pix_holds, kind 'med', refs
-- med:<report>:<n>; I11), returned through the devolução saga (a
-- devolução that captures the hold, db.RecordRefund). A row's status is
-- the truth of OUR saga, changed under its row lock, each change fenced
-- by the generation it was decided on (gen, bumped by every change):
--
--   received -> held -> acknowledged -> analysed -> (closed at the DICT)
--     DISAGREED -> ended (released)
--     AGREED    -> awaiting_refund_request -> ended (released: no request
--                  within 72 hours) | returning -> (the devolução ends)
--                  -> awaiting_credit (a part is left to return) ...
--                  -> ended (returned | returned_in_part)
--   any open state before a return -> ended (cancelled: the reporter
--   cancelled the report, its hold released)
--   not_ours: a report about a PIX we did not credit: recorded, counted,
--   nothing held.
--
-- What operators browse: the DICT's fields as it sends them (the reporter's
-- free text, report_details, is shown to operators only, never in a
-- customer's view of the credit); no personal data of the payer beyond them.
CREATE TABLE pix_med_reports (
    id                    uuid        PRIMARY KEY,
    -- The PIX reported (the DICT's TransactionId): ours when we credited
    -- it (pix_credits), else status not_ours and no account.
    end_to_end_id         text        NOT NULL,
    account_id            text        REFERENCES accounts (id),
    -- The PIX's credit (the reported amount: the DICT's report names the
    -- transaction, whose amount is the credit's) and when it was credited.
    amount_cents          bigint      CHECK (amount_cents > 0),
    credited_at           timestamptz,
    -- The DICT's report as last received: who reported (the payer's
    -- participant, ISPB), the infraction's type, who created it, the
    -- reporter's details, its DICT status and LastModified.
    reporter              text        NOT NULL CHECK (char_length(reporter) BETWEEN 1 AND 8),
    infraction_type       text        NOT NULL CHECK (char_length(infraction_type) BETWEEN 1 AND 40),
    reported_by           text        NOT NULL CHECK (char_length(reported_by) BETWEEN 1 AND 40),
    report_details        text        NOT NULL DEFAULT '' CHECK (char_length(report_details) <= 2000),
    dict_status           text        NOT NULL CHECK (dict_status IN ('OPEN', 'ACKNOWLEDGED', 'CLOSED', 'CANCELLED')),
    dict_modified_at      timestamptz NOT NULL,
    reported_at           timestamptz NOT NULL,
    status                text        NOT NULL
        CHECK (status IN ('received', 'held', 'acknowledged', 'analysed', 'awaiting_refund_request',
                          'returning', 'awaiting_credit', 'ended', 'not_ours')),
    end_cause             text        CHECK (end_cause IN ('released', 'returned', 'returned_in_part', 'cancelled')),
    -- The operator's analysis (the close the saga sends to the DICT).
    analysis_result       text        CHECK (analysis_result IN ('AGREED', 'DISAGREED')),
    analysis_details      text        CHECK (char_length(analysis_details) <= 2000),
    analysed_by           text,
    analysed_at           timestamptz,
    acknowledged_at       timestamptz,
    closed_at             timestamptz,
    -- The hold now held (NULL: none), how many holds were made (the next's
    -- ref is med:<id>:<holds + 1>), and what the current one holds.
    hold_id               uuid        UNIQUE REFERENCES pix_holds (id),
    holds                 int         NOT NULL DEFAULT 0 CHECK (holds >= 0),
    held_cents            bigint      NOT NULL DEFAULT 0 CHECK (held_cents >= 0),
    -- The payer's participant's refund request (the DICT's Refund), its
    -- amount, and when we closed it at the DICT, with which devolução's
    -- rtrId (RefundTransactionId).
    refund_request_id     uuid        UNIQUE,
    refund_request_cents  bigint      CHECK (refund_request_cents > 0),
    refund_request_status text        CHECK (refund_request_status IN ('OPEN', 'CLOSED', 'CANCELLED')),
    refund_closed_at      timestamptz,
    refund_closed_rtr_id  text,
    -- The devolução now returning (the hand-over), and what the ended
    -- ones returned, in how many parts.
    refund_id             text        UNIQUE REFERENCES pix_refunds (id),
    returned_cents        bigint      NOT NULL DEFAULT 0 CHECK (returned_cents >= 0),
    returns               int         NOT NULL DEFAULT 0 CHECK (returns >= 0),
    first_rtr_id          text,
    -- The deadlines: the analysis within 7 days of the report (a gauge
    -- and an alert; the saga never decides alone), the refund request
    -- within 72 hours of our close, returns in parts until 90 days after
    -- the PIX.
    analysis_due_at       timestamptz NOT NULL,
    refund_request_due_at timestamptz,
    return_until          timestamptz,
    -- A DICT call refused (or its answer unverified): the saga stopped
    -- there, visibly, until an operator or a new intake wakes it.
    dict_problem          text        CHECK (char_length(dict_problem) <= 500),
    gen                   bigint      NOT NULL DEFAULT 1,
    traceparent           text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    ended_at              timestamptz,
    -- The durable start of its saga: due while the report is open.
    dispatch_due_at       timestamptz,
    dispatched_at         timestamptz,
    CONSTRAINT pix_med_due_while_open CHECK ((status NOT IN ('ended', 'not_ours')) = (dispatch_due_at IS NOT NULL)),
    CONSTRAINT pix_med_ended CHECK ((status = 'ended') = (ended_at IS NOT NULL)),
    CONSTRAINT pix_med_end_cause CHECK ((status = 'ended') = (end_cause IS NOT NULL)),
    CONSTRAINT pix_med_ours CHECK ((status = 'not_ours') = (account_id IS NULL)),
    CONSTRAINT pix_med_credit CHECK ((account_id IS NULL) = (amount_cents IS NULL) AND (account_id IS NULL) = (credited_at IS NULL)),
    CONSTRAINT pix_med_analysed CHECK ((analysis_result IS NULL) = (analysed_at IS NULL)),
    CONSTRAINT pix_med_returning CHECK ((status = 'returning') = (refund_id IS NOT NULL)),
    CONSTRAINT pix_med_returned_within CHECK (returned_cents <= COALESCE(amount_cents, 0))
);

CREATE INDEX pix_med_reports_due_idx ON pix_med_reports (dispatch_due_at) WHERE dispatch_due_at IS NOT NULL;
-- A PIX's reports (the credit's view).
CREATE INDEX pix_med_reports_pix_idx ON pix_med_reports (end_to_end_id, created_at, id);
-- The open reports (the gauges, at each scrape).
CREATE INDEX pix_med_reports_open_idx ON pix_med_reports (analysis_due_at)
    INCLUDE (status, held_cents, refund_request_due_at, return_until) WHERE dispatch_due_at IS NOT NULL;
