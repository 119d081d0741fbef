package catchup

// PartsPerRun is partsPerRun, for the tests of package catchup_test.
const PartsPerRun = partsPerRun
