package zklock

// Test hooks: unexported helpers exposed to the black-box tests.
var (
	SortChildren   = sortChildren
	CompareUTF16   = compareUTF16
	IsProtected    = isProtected
	ValidatePath   = validatePath
	NewUUIDForTest = newUUID
)
