import type { LinkingMessages } from '../en.js'

const vi: LinkingMessages = {
  signInMethods: 'Phương thức đăng nhập',
  loadingMethods: 'Đang tải phương thức đăng nhập…',
  signInToManage: 'Đăng nhập vào ứng dụng để xem và thay đổi cách bạn đăng nhập.',
  kindEmail: 'Email',
  kindPasskey: 'Passkey',
  kindWallet: 'Ví',
  kindOAuth: 'Tài khoản mạng xã hội',
  linkedOn: 'Đã liên kết {date}',
  remove: 'Gỡ',
  removeMethod: 'Gỡ {label}',
  onlyMethod: 'Đây là cách đăng nhập duy nhất của bạn. Hãy thêm cách khác trước khi gỡ.',
  addMethod: 'Thêm phương thức đăng nhập',
  emailToLink: 'Địa chỉ email cần thêm',
  sendCode: 'Gửi mã',
  typeCodeInFrame: 'Nhập mã đã gửi tới {email} trong hộp thoại.',
  signInWalletToLink: 'Ký thông điệp trong {name}',
  linking: 'Đang liên kết…',
  methodLinked: 'Đã liên kết {label}. Giờ bạn có thể đăng nhập bằng nó.',
  removing: 'Đang gỡ…',
  methodRemoved: 'Đã gỡ {label}.',
  secondFactor: 'Yếu tố thứ hai',
  mfaOff: 'Chưa thiết lập yếu tố thứ hai.',
  mfaOn: 'Đã thiết lập ứng dụng xác thực.',
  setUpTotp: 'Thiết lập ứng dụng xác thực',
  settingUpTotp: 'Đang thiết lập ứng dụng xác thực…',
  totpEnrolled: 'Đã thiết lập ứng dụng xác thực. Hãy cất mã khôi phục ở nơi an toàn.',
  methodsStatus: 'Trạng thái phương thức đăng nhập',
}

export default vi
