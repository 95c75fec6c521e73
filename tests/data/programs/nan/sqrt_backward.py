import torch

x = torch.zeros(3, requires_grad=True)
p = torch.ones(3)
p.mul_(2.0)                      # in place, finite
y = torch.sqrt(x).sum()          # finite forward
y.backward()                     # the gradient of sqrt at 0 is inf
print(x.grad)
