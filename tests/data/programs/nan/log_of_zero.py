import torch


def norm(x):
    return x / x.norm(dim=-1, keepdim=True)

x = torch.randn(4, 8)
w = torch.randn(8, 8, requires_grad=True)
y = torch.relu(x @ w)
z = torch.zeros(4, 8)
loss = (norm(y) + torch.log(z)).sum()   # log of zero: -inf
loss.backward()
print("done", float(loss))
