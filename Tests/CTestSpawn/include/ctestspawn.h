#ifndef CTESTSPAWN_H
#define CTESTSPAWN_H
#include <spawn.h>
/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+), which Swift's Glibc module does not
/// import: closes every descriptor from `from` up in the spawned child.
int cts_addclosefrom(posix_spawn_file_actions_t *actions, int from);
/// posix_spawn_file_actions_addchdir_np (glibc 2.29+): the child starts in `path`.
int cts_addchdir(posix_spawn_file_actions_t *actions, const char *path);
#endif
