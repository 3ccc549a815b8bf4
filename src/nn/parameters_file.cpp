// Parameter files: .npz with one array per named parameter.
#include <map>

#include "surfgrad/io.hpp"
#include "surfgrad/nn.hpp"

namespace surfgrad::nn {

void save_parameters(const Module& module, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (auto& [name, v] : module.named_parameters()) arrays.emplace_back(name, v.value());
  save_npz(path, arrays);
}

void load_parameters(const Module& module, const std::string& path) {
  auto params = module.named_parameters();
  if (params.empty()) return;
  std::map<std::string, Tensor> file;
  for (auto& [name, t] : load_npz(params[0].second.context(), path)) file[name] = t;
  for (auto& [name, v] : params) {
    auto it = file.find(name);
    if (it == file.end())
      throw Error(ErrorKind::IO, "'" + path + "': no array for parameter '" + name + "' (the file holds " +
                                     std::to_string(file.size()) + " arrays); was it saved from another model?");
    const Tensor& t = it->second;
    if (t.shape() != v.shape() || t.dtype() != v.dtype())
      throw Error(ErrorKind::IO, "'" + path + "': parameter '" + name + "' is " + t.describe() + " in the file, " +
                                     v.value().describe() + " in the model");
  }
  // All checked: only now replace anything, so a bad file leaves the model untouched.
  for (auto& [name, v] : params) v.value().assign(file[name]);
}

}  // namespace surfgrad::nn
