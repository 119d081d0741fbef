-- +goose Up
-- The analysis result the DICT's notice of a report carries (saga/med,
-- Intake; docs/med.md, "A bank behind a PSP"): a bank behind a PSP
-- (MED_DICT_DISABLED=true) can't read the DICT back; its report's close is
-- the PSP's notice CLOSED, recorded as ours when its AnalysisResult is the
-- one we analysed, and stopped (an operator's) when it is another. NULL: no
-- notice said one. A nullable column without a default on the MED saga's
-- own small table: the file's one transaction.
ALTER TABLE pix_med_reports ADD COLUMN dict_analysis_result text
    CHECK (dict_analysis_result IN ('AGREED', 'DISAGREED'));
