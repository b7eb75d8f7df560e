// FileLock: an exclusive advisory lock (flock) on a lock file, held for the object's
// lifetime, so that processes sharing a file (the tuning database) take turns at a
// read-modify-write. The lock file is created when missing and left in place: removing
// it would let a process lock a file that another has just replaced.
#pragma once
#include <string>

namespace kiln::runtime {

class FileLock {
public:
  // Blocks until the lock on `path` is held. Throws kiln::Error when the file cannot
  // be opened or locked.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

private:
  int fd_ = -1;
};

}  // namespace kiln::runtime
