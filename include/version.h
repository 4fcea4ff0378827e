/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fallback version for builds outside a git checkout (DKMS, tarballs).
 * Kbuild passes -DIPOIB_NG_VERSION from "git describe" when it can.
 */
#ifndef IPOIB_NG_VERSION_H
#define IPOIB_NG_VERSION_H

#ifndef IPOIB_NG_VERSION
#define IPOIB_NG_VERSION "0.1.0"
#endif

#endif /* IPOIB_NG_VERSION_H */
