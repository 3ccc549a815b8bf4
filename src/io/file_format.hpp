// What a file's first bytes say it is. The point and label readers choose their decoder by the
// file's name (.npy, .npz, .csv, else IDX); a file whose name says nothing is sniffed, so a .npz
// or a renamed .npy is read, and a Parquet or HDF5 file is named as such instead of being called
// "not an IDX file".
#pragma once
#include <string>

namespace surfgrad::io {

enum class FileFormat { Npy, Zip, Gzip, Parquet, Hdf5, Png, Text, Unknown };

// The format of `path` by its magic bytes (Unknown if unreadable or unrecognised; IDX has no
// magic of its own beyond two zero bytes, so it is Unknown too).
FileFormat sniff_format(const std::string& path);

// "a zip archive (.npz)", "a Parquet file", … for messages.
std::string format_name(FileFormat format);

}  // namespace surfgrad::io
