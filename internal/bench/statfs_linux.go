//go:build linux

package main

import (
	"fmt"
	"syscall"
)

// fsType names the file system dir is on ("tmpfs", "ext4", ...), "missing"
// if dir cannot be read, or the magic number if it is not one known here.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "missing"
	}
	switch uint32(st.Type) {
	case 0x01021994:
		return "tmpfs"
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlay"
	case 0x2FC12FC1:
		return "zfs"
	}
	return fmt.Sprintf("fs 0x%x", uint32(st.Type))
}
