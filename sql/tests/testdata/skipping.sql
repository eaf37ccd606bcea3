-- harness fixture: a skipped assertion
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(2);
SELECT ok(true, 'first passes');
SELECT skip('skipped on purpose', 1);
SELECT * FROM finish();
ROLLBACK;
