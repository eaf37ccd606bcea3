-- harness fixture: no plan up front: no_plan() prints it only at the end
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT * FROM no_plan();
SELECT ok(true, 'first passes');
SELECT * FROM finish();
ROLLBACK;
